/**
 * Values built on their first use, then kept. The valibot schemas are built this way: a
 * command builds only the ones it uses (`run -- true` with no user config validates none),
 * where building them all when their modules load cost every start about 1.5 ms of CPU.
 */

/** `build()` on the first call, the same value on every later one. */
export function once<T>(build: () => T): () => T {
  let built = false;
  let value: T;
  return () => {
    if (!built) {
      value = build();
      built = true;
    }
    return value;
  };
}
