/** lib/plugin/worker.js is imported as text (the worker's source): its type for tsc. */
declare const source: string;
export default source;
