// A problem in the operator's environment rather than in the command line they typed (nothing answers at an
// address, a component this machine cannot run): the CLI prints its message as one line, no stack trace, and
// exits 1 (2 is for bad usage: a UsageError).

export class OperatorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OperatorError';
  }
}
