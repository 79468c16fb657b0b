import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

// Gathers the Apache Kafka broker and its runtime dependencies from Maven Central, once per machine.
//
// kafka_2.13's POM names no logging backend, so SLF4J would fall back to a no-op logger and the broker would
// be silent; 3.9 logs through SLF4J 1.7 + reload4j, hence slf4j-reload4j 1.7.36 (an SLF4J 2 binding would not
// bind). A throwaway POM with packaging `pom` lets copy-dependencies resolve the tree without a build.
// The dependency plugin is pinned: Maven 3.8's default version is years old.

export const KAFKA_VERSION = '3.9.2';
const SLF4J_BINDING = { groupId: 'org.slf4j', artifactId: 'slf4j-reload4j', version: '1.7.36' };
const DEPENDENCY_PLUGIN = 'org.apache.maven.plugins:maven-dependency-plugin:3.8.1';
/** Written last; its presence means the folder is complete and Maven need not run. */
const MARKER = '.complete';
const PROGRESS_EVERY_MS = 15_000;

function projectRoot(): string {
  // The nearest folder up from here whose package.json is named meridian (works from dist/ too).
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const pj = path.join(dir, 'package.json');
    if (fs.existsSync(pj) && (JSON.parse(fs.readFileSync(pj, 'utf8')) as { name?: string }).name === 'meridian') return dir;
    if (path.dirname(dir) === dir) return process.cwd();
  }
}

/** `$MERIDIAN_CACHE/kafka-<version>`, else `<project>/.cache/kafka-<version>` (git-ignored). */
export function jarsDir(version = KAFKA_VERSION): string {
  const root = process.env.MERIDIAN_CACHE ?? path.join(projectRoot(), '.cache');
  return path.join(root, `kafka-${version}`);
}

/** A java -cp entry covering every jar of the folder (the JVM expands `dir/*` itself). */
export function classpath(dir: string): string {
  return path.join(dir, '*');
}

export function jarsComplete(dir: string): boolean {
  return fs.existsSync(path.join(dir, MARKER));
}

function pom(version: string): string {
  const dep = (g: string, a: string, v: string): string =>
    `    <dependency><groupId>${g}</groupId><artifactId>${a}</artifactId><version>${v}</version></dependency>`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<project xmlns="http://maven.apache.org/POM/4.0.0">',
    '  <modelVersion>4.0.0</modelVersion>',
    '  <groupId>meridian.local</groupId><artifactId>kafka-jars</artifactId><version>0</version>',
    '  <packaging>pom</packaging>',
    '  <dependencies>',
    dep('org.apache.kafka', 'kafka_2.13', version),
    dep(SLF4J_BINDING.groupId, SLF4J_BINDING.artifactId, SLF4J_BINDING.version),
    '  </dependencies>',
    '</project>',
    '',
  ].join('\n');
}

function runMaven(workDir: string, outDir: string, progress: (line: string) => void): Promise<void> {
  const args = ['-B', '-q', '-Dstyle.color=never', '-f', path.join(workDir, 'pom.xml'), `${DEPENDENCY_PLUGIN}:copy-dependencies`, '-DincludeScope=runtime', `-DoutputDirectory=${outDir}`];
  return new Promise((resolve, reject) => {
    const child = spawn('mvn', args, { cwd: workDir, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (b: Buffer): void => {
      output = (output + b.toString('utf8')).slice(-8_000); // -q prints only errors; keep the tail for the message
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const started = Date.now();
    const timer = setInterval(() => progress(`still gathering Kafka jars (${Math.round((Date.now() - started) / 1000)} s)`), PROGRESS_EVERY_MS);
    child.once('error', (e) => {
      clearInterval(timer);
      reject(new Error(`cannot run mvn (is Maven installed?): ${e.message}`));
    });
    child.once('close', (code) => {
      clearInterval(timer);
      if (code === 0) resolve();
      else reject(new Error(`mvn copy-dependencies exited with ${code}:\n${output.trim()}`));
    });
  });
}

export interface GatherOptions {
  version?: string;
  dir?: string;
  /** Progress lines; default stderr, because the first run takes minutes and stdout may be a pipe. */
  progress?: (line: string) => void;
}

/** Returns a folder holding the broker jars, running Maven only when no complete folder exists yet. */
export async function ensureKafkaJars(opts: GatherOptions = {}): Promise<string> {
  const version = opts.version ?? KAFKA_VERSION;
  const dir = opts.dir ?? jarsDir(version);
  const progress = opts.progress ?? ((line: string) => process.stderr.write(`[kafka jars] ${line}\n`));
  if (jarsComplete(dir)) return dir;

  // Gather into a private folder and rename it into place, so a concurrent run (another test process)
  // never sees a half-filled folder and two runs cannot interleave their files.
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const staging = `${dir}.tmp-${process.pid}-${Date.now()}`;
  const jars = path.join(staging, 'jars');
  fs.mkdirSync(jars, { recursive: true });
  fs.writeFileSync(path.join(staging, 'pom.xml'), pom(version));
  progress(`gathering Apache Kafka ${version} broker jars from Maven Central (first run only; this takes a while)`);
  const started = Date.now();
  try {
    await runMaven(staging, jars, progress);
    const names = fs.readdirSync(jars).filter((n) => n.endsWith('.jar'));
    if (!names.some((n) => n.startsWith(`kafka_2.13-${version}`))) throw new Error(`Maven finished but kafka_2.13-${version}.jar is missing`);
    fs.writeFileSync(path.join(jars, MARKER), `${names.sort().join('\n')}\n`);
    try {
      fs.renameSync(jars, dir);
    } catch (e) {
      if (!jarsComplete(dir)) throw e; // someone else finished first: theirs is as good as ours
    }
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  progress(`Kafka jars ready after ${Math.round((Date.now() - started) / 1000)} s`);
  return dir;
}
