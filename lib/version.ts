/** turnguard's version: package.json's, the one place it is written. */
import pkg from "../package.json" with { type: "json" };

/** The version `--version`, `--help` and exported telemetry say. */
export const VERSION: string = pkg.version;
