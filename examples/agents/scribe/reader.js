// The record reader for scribe's session files (examples/agents/scribe/agent.mjs), one
// parsed JSON line at a time: docs/PLUGINS.md "Teach turnguard a new agent".
export default {
  readers: [{
    id: "scribe.session",
    agents: ["scribe"],
    read(r, context) {
      if (r.type === "user") return { kind: "prompt" };
      if (r.type === "assistant") return { kind: "reply", final: true, text: r.text };
      if (r.type === "error") {
        // turnguard's own classifier names the category the words give, if any.
        const { category } = context.classify(r.message);
        return {
          kind: "error",
          cause: r.message,
          code: r.code,
          ...(category !== "unknown" ? { category } : {}),
        };
      }
      return null;
    },
  }],
};
