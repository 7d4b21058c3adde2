/**
 * The budget scope of code plugins: how much time they may take to decide one thing. Whoever
 * decides a turn runs that decision inside `withPluginBudget`; every code plugin call inside
 * is charged to one budget per plugin file (`plugin_budget_ms`). A scope opened inside an
 * open one joins it, so the outermost caller says what one turn is: `run` and the proxy open
 * one per turn, `findLogCause` and `classify` one each when called alone, `scan` and
 * `explain` one per input line. A call made outside any scope has a budget of its own.
 * Scopes are synchronous, like the plugin calls they hold.
 */

/** What one plugin file has spent in one scope, and whether it was stopped there. */
export interface PluginSpend {
  spentMs: number;
  /** Set once the plugin ran out of budget: its other calls in the scope are skipped. */
  stopped: boolean;
}

/** The open scope: each plugin file's spend, keyed by the object that runs it. */
let open: Map<object, PluginSpend> | null = null;

/**
 * Runs `decide` with one plugin budget and returns what it returns. `decide` must be
 * synchronous: the scope closes when it returns. Inside an open scope it joins that scope.
 */
export function withPluginBudget<T>(decide: () => T): T {
  if (open !== null) return decide();
  open = new Map();
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
