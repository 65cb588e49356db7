// A local server that speaks the OpenAI Chat Completions streaming format, so the Worker's
// provider path is tested against real HTTP. What it does is steered by the last user
// message: "[cut]" stops midway and drops the connection, "[500]" fails before answering,
// "[slow]" waits before the first token, "[late]" before answering at all (no headers yet),
// "[mute]" never answers at all (held open until the caller drops it, as "[hang]" is), "[long]" streams many tokens slowly, "[bench:N]"
// streams N tokens at the server's pace, "[hang]" never sends a token and "[stall]" goes
// silent after three (both hold the connection until the caller drops it, recorded in
// `dropped`); a routing request picks the assistant a "[route:NAME]" marker names; "[tool:NAME]"
// calls the tool NAME when it is offered (with `{"order_id": "A1"}`, or see "[badargs]" and
// "[noargs]" below; "[preface]" says "Let me check." first) and answers from its result;
// "[tool-loop:NAME]" asks for NAME every time it is offered, and answers once it is not;
// "[500-after-tool]" fails once it is given a tool's result; "[nodone]" ends its stream after
// the finish without `data: [DONE]`, as some servers do; "[refusal]" refuses in
// `delta.refusal`; "[429]" refuses with 429 and `Retry-After: 7`; "[huge]" streams about 2.4 MB of text, ignoring max_tokens; "[finish-hang]" sends its finish and usage chunks, then holds the
// connection open without `[DONE]`; anything else is answered with a short reply that names
// the question.
import { startServer, sleep } from "./harness.mjs";

export const FAKE_KEY = "sk-test-local";

function chunk(body) {
  return `data: ${JSON.stringify(body)}\n\n`;
}

export async function startModelServer({ tokenDelayMs = 5 } = {}) {
  const dropped = [];
  // Holds the connection open, sending nothing more, until the caller goes away.
  const silence = (res, query) => {
    const since = Date.now();
    return new Promise((resolve) => res.on("close", () => { dropped.push({ query, afterMs: Date.now() - since }); resolve(); }));
  };
  const server = await startServer(async (req, res, body) => {
    if (req.url !== "/v1/chat/completions" || req.method !== "POST") {
      res.writeHead(404);
      return res.end();
    }
    if (req.headers.authorization !== `Bearer ${FAKE_KEY}`) {
      res.writeHead(401, { "Content-Type": "application/json" });
      return res.end(JSON.stringify({ error: { message: "bad key" } }));
    }
    const request = JSON.parse(body);
    const last = [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";
    const final = request.messages.at(-1);
    if (last.includes("[late]")) await sleep(1500);
    if (last.includes("[mute]")) return silence(res, last);
    // "[500-after-tool]" fails once it is given a tool's result.
    if (last.includes("[500]") || (last.includes("[500-after-tool]") && final.role === "tool")) {
      res.writeHead(500, { "Content-Type": "application/json" });
      return res.end(JSON.stringify({ error: { message: "model exploded" } }));
    }
    if (last.includes("[429]")) {
      res.writeHead(429, { "Content-Type": "application/json", "Retry-After": "7" });
      return res.end(JSON.stringify({ error: { message: "slow down" } }));
    }
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    const id = "chatcmpl-test";
    const piece = (content) => chunk({ id, object: "chat.completion.chunk", model: request.model, choices: [{ index: 0, delta: { content } }] });
    res.write(chunk({ id, object: "chat.completion.chunk", model: request.model, choices: [{ index: 0, delta: { role: "assistant", content: "" } }] }));
    if (last.includes("[slow]")) await sleep(1500);
    if (last.includes("[hang]")) return silence(res, last);
    let tokens;
    if (String(request.messages[0]?.content).startsWith("You label support conversations")) {
      // A background agent judging tags: answer with the tags whose name the conversation says.
      const convo = String(request.messages.at(-1).content).split("Conversation:")[1] ?? "";
      const names = [...String(request.messages.at(-1).content).matchAll(/^- ([^:]+):/gm)].map((m) => m[1]);
      tokens = [`Here you go: {"tags": ${JSON.stringify(names.filter((n) => convo.toLowerCase().includes(n.toLowerCase())))}}`];
    } else if (String(request.messages[0]?.content).startsWith("You route a customer's message")) {
      // Choosing the agent: the number of the assistant a "[route:NAME]" marker in the message
      // names; without one, or for a name not listed, a reply that names no assistant.
      const asked = String(request.messages.at(-1).content);
      const wanted = asked.match(/\[route:([^\]]+)\]/)?.[1];
      const listed = [...asked.matchAll(/^(\d+)\. ([^:\n]+)/gm)].find((m) => m[2].trim() === wanted);
      tokens = [listed ? `${listed[1]}` : "none of them"];
    } else if (String(request.messages[0]?.content).startsWith("You rewrite follow-up questions")) {
      // A follow-up to stand alone: the previous question's words, then the follow-up's.
      const asked = String(request.messages.at(-1).content);
      const previous = asked.match(/^Previous question: (.*)$/m)?.[1] ?? "";
      const followUp = asked.match(/^Follow-up: (.*)$/m)?.[1] ?? "";
      tokens = [`"${previous.replace(/\?$/, "")}: `, `${followUp}"`];
    }
    const toolAsked = last.match(/\[tool:([\w-]+)\]/);
    const looping = last.match(/\[tool-loop:([\w-]+)\]/);
    if (!tokens && looping) {
      // Asks for the tool every time, round after round; allowed none (`tool_choice: "none"`),
      // it still writes a call beside its answer from the results it was given.
      const offered = request.tool_choice !== "none" && request.tools?.some((t) => t.function.name === looping[1]);
      const n = request.messages.filter((m) => m.role === "tool" && !String(m.content).startsWith("Error:")).length;
      res.write(chunk({ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: `call_${n}`, type: "function", function: { name: looping[1], arguments: '{"order_id": "A1"}' } }] } }] }));
      if (offered) {
        res.write(chunk({ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] }));
        res.write("data: [DONE]\n\n");
        return res.end();
      }
      tokens = ["Out of tools after ", `${n} calls.`];
    } else if (tokens) { /* judged */ } else if (final.role === "tool") {
      // Second round: answer from what the tool returned.
      tokens = ["Tool said: ", String(final.content).slice(0, 120)];
    } else if (toolAsked && request.tools?.some((t) => t.function.name === toolAsked[1])) {
      res.write(chunk({ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: toolAsked[1], arguments: "" } }] } }] }));
      // "[preface]" says something before it calls.
      if (last.includes("[preface]")) res.write(piece("Let me check."));
      // "[badargs]" writes arguments that are not JSON, "[noargs]" an object without them.
      const args = last.includes("[badargs]") ? "{not json" : last.includes("[noargs]") ? "{}" : '{"order_id": "A1"}';
      res.write(chunk({ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: args } }] } }] }));
      res.write(chunk({ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] }));
      res.write("data: [DONE]\n\n");
      return res.end();
    }
    if (last.includes("[refusal]")) {
      res.write(chunk({ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: { role: "assistant", refusal: "I can't help with that." } }] }));
      res.write(chunk({ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }));
      res.write("data: [DONE]\n\n");
      return res.end();
    }
    const bench = last.match(/\[bench:(\d+)\]/);
    if (tokens) { /* answered from a tool result */ }
    else if (bench) tokens = Array.from({ length: Number(bench[1]) }, (_, i) => `w${i} `);
    else if (last.includes("[huge]")) tokens = Array.from({ length: 300 }, (_, i) => `${String(i).padStart(4, "0")}${"x".repeat(7995)} `);
    else if (last.includes("[long]")) tokens = Array.from({ length: 200 }, (_, i) => `word${i} `);
    else tokens = ["You", " asked", ":", ` ${last.replace(/\s+/g, " ").slice(0, 80)}`, "."];
    for (let i = 0; i < tokens.length; i++) {
      if (res.destroyed) return;
      res.write(piece(tokens[i]));
      if (last.includes("[stall]") && i === 2) return silence(res, last);
      if (last.includes("[cut]") && i === 2) {
        // Let the pieces so far reach the Worker, then drop the connection mid-stream.
        await sleep(100);
        return res.destroy();
      }
      await sleep(last.includes("[long]") ? 25 : tokenDelayMs);
    }
    res.write(chunk({ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }));
    res.write(chunk({ id, object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 42, completion_tokens: tokens.length, total_tokens: 42 + tokens.length } }));
    if (last.includes("[finish-hang]")) return silence(res, last);
    if (!last.includes("[nodone]")) res.write("data: [DONE]\n\n");
    res.end();
  });
  return { ...server, base: `${server.base}/v1`, dropped };
}
