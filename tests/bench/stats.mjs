// What the benchmarks share: percentiles (nearest rank) and one line of them.

/** The P-th percentile of XS (nearest rank). */
export const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

/** "p50 … p95 … p99 … ms (n=…)" of XS. */
export const fmt = (xs) =>
  `p50 ${pct(xs, 50).toFixed(1)}  p95 ${pct(xs, 95).toFixed(1)}  p99 ${pct(xs, 99).toFixed(1)} ms (n=${xs.length})`;
