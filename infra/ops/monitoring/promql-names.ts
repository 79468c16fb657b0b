// The metric names a PromQL expression reads, for the check that every alert rule and dashboard panel names a
// series the service exports (test/infra/monitoring.test.ts). Not a PromQL parser: it removes what cannot be a
// metric name (strings, label matchers, range and offset durations, grouping clauses, Grafana's $variables) and
// keeps the identifiers that are neither functions (followed by "(") nor keywords; Grafana's label_values(m, l)
// query counts as m. Names inside {__name__="…"}
// are not followed; the rules and the dashboard do not use that form.

const KEYWORDS = new Set([
  'and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'inf', 'nan',
  // aggregation operators written without a following "(" in `sum by (x) (…)`
  'sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio',
]);

export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/\blabel_values\(\s*([^,()]*?)\s*,\s*\w+\s*\)/g, ' $1 ') // Grafana's label_values(metric{…}, label): the metric only
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""') // string literals (label values, count_values labels)
    .replace(/\$\{[^}]*\}|\$\w+/g, '1') // Grafana variables: $__rate_interval, ${job}
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // ranges and subqueries
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // grouping label lists
    .replace(/\boffset\s+-?\w+/g, ' ')
    .replace(/#[^\n]*/g, ' '); // comments
  const out = new Set<string>();
  const ident = /[A-Za-z_:][A-Za-z0-9_:]*/g;
  for (let m = ident.exec(stripped); m !== null; m = ident.exec(stripped)) {
    const name = m[0];
    const before = stripped[m.index - 1];
    if (before !== undefined && /[0-9.]/.test(before)) continue; // the unit of a number: 1e3, 0x10, 5m
    const after = stripped.slice(m.index + name.length).match(/^\s*(.)/)?.[1];
    if (after === '(') continue; // a function
    if (KEYWORDS.has(name.toLowerCase())) continue;
    out.add(name);
  }
  return [...out];
}

/** Names from `exprs` that are not in `exported` (sample names, histograms' _bucket/_sum/_count included). */
export function unknownMetrics(exprs: readonly string[], exported: ReadonlySet<string>): string[] {
  const out = new Set<string>();
  for (const e of exprs) for (const n of metricNames(e)) if (!exported.has(n)) out.add(n);
  return [...out].sort();
}
