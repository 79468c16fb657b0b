import { OperatorError } from './operator-error';

// A component that cannot run on this machine (a native module with no build for this platform, a build tool that
// is not installed) is an operator's choice to make, not a crash: one line naming the component, the platform,
// what is missing, and how to run without it. The CLI prints it without a stack trace and exits 1.

/** process.platform/process.arch, as npm's platform packages name them (linux/x64, darwin/arm64, …). */
export function platformName(): string {
  return `${process.platform}/${process.arch}`;
}

export class ComponentUnavailable extends OperatorError {
  constructor(
    /** The config section that asks for it ('localchain', 'gateways.submit.quic'). */
    readonly component: string,
    /** What is missing, one clause. */
    readonly missing: string,
    /** How to run without it: the setting to change, and what to use instead. */
    readonly without: string,
  ) {
    super(`${component} cannot run on this machine (${platformName()}): ${missing}; to run without it, ${without}`);
    this.name = 'ComponentUnavailable';
  }
}

/** The first line of an error's message (loaders chain long explanations; one line is what an operator reads). */
export function firstLine(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  return m.split('\n')[0]!.trim();
}
