/**
 * The budget scope of code plugins: how much time they may take to decide one thing. Whoever
 * decides a turn runs that decision inside `withPluginBudget`; every code plugin call inside
 * is charged to one budget per plugin file (`plugin_budget_ms`). A scope opened inside an
 * open one joins it, so the outermost caller says what one turn is: `run` and the proxy open
 * one per turn, `findLogCause` and `classify` one each when called alone, `scan` and
 * `explain` one per input line. A call made outside any scope has a budget of its own.
 * Scopes are synchronous, like the plugin calls they hold; a decision made again and again
 * over a turn's time (the live follower's looks, the records wait's reads) re-enters the
 * turn's `PluginLedger`, so the turn's budget is one, not one per look.
 */

/** What one plugin file has spent in one scope, and whether it was stopped there. */
export interface PluginSpend {
  spentMs: number;
  /** Set once the plugin ran out of budget: its other calls in the scope are skipped. */
  stopped: boolean;
}

/** Each plugin file's spend in one scope, keyed by the object that runs it. */
export type PluginLedger = Map<object, PluginSpend>;

/** A ledger that outlives one synchronous scope: one turn's, kept by whoever runs the turn. */
export function pluginLedger(): PluginLedger {
  return new Map();
}

/** The open scope. */
let open: PluginLedger | null = null;

/**
 * Runs `decide` with one plugin budget and returns what it returns. `decide` must be
 * synchronous: the scope closes when it returns. Inside an open scope it joins that scope.
 * With `ledger`, the scope is charged to it (what was spent there before counts).
 */
export function withPluginBudget<T>(decide: () => T, ledger?: PluginLedger): T {
  if (open !== null) return decide();
  open = ledger ?? new Map();
  try {
    return decide();
  } finally {
    open = null;
  }
}

/**
 * The spend a call of `plugin` is charged to: its spend in the open scope, or, outside any
 * scope, a fresh one for this call alone.
 */
export function spendOf(plugin: object): PluginSpend {
  if (open === null) return { spentMs: 0, stopped: false };
  let spend = open.get(plugin);
  if (spend === undefined) open.set(plugin, spend = { spentMs: 0, stopped: false });
  return spend;
}
