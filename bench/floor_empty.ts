/**
 * Floor of `turnguard --help` and `turnguard schema`: an empty program, compiled with
 * `bun build --compile` like turnguard. What the runtime costs to start and exit.
 */
export {};
