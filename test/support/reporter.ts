import Mocha from 'mocha';

// The spec reporter plus one plain closing line ("N passed, N failed, N skipped") that CI tooling reads.
class SpecWithTotals extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    runner.once('end', () => {
      const s = this.stats;
      process.stdout.write(`\n${s.passes} passed, ${s.failures} failed, ${s.pending} skipped\n`);
    });
  }
}

export = SpecWithTotals;
