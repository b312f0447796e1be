// What a conversation looks like: messages rendered from Markdown (sanitised), tool calls as
// collapsible cards, and the approval panel of a paused run.
// Relative URLs, not bare names: an import map would be an inline script, which the CSP refuses.
import { marked } from "../../vendor/marked/marked.esm.js";
import DOMPurify from "../../vendor/dompurify/purify.es.mjs";
import hljs from "../../vendor/highlightjs/highlight.min.js";
import katex from "../../vendor/katex/katex.mjs";

const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

// Math, as chat products write it: $…$ inline, $$…$$ displayed (a paragraph of its own, or
// inline). The TeX leaves marked untouched (no emphasis out of its underscores) as an element
// holding only its text; KaTeX draws it once the HTML is sanitised (see renderMath). "$5 and $10"
// stays text: an inline formula neither starts nor ends with a space, nor is followed by a digit.
const MATH = {
  extensions: [
    {
      name: "mathBlock",
      level: "block",
      start: (src) => src.match(/^ {0,3}\$\$/m)?.index,
      tokenizer(src) {
        const match = /^ {0,3}\$\$([\s\S]+?)\$\$[ \t]*(?:\n+|$)/.exec(src);
        if (match) return { type: "mathBlock", raw: match[0], text: match[1].trim() };
        return undefined;
      },
      renderer: (token) => `<div class="math-display">${escapeHtml(token.text)}</div>\n`,
    },
    {
      name: "mathInline",
      level: "inline",
      start: (src) => src.match(/\$/)?.index,
      tokenizer(src) {
        const match = /^\$\$([^$]+?)\$\$/.exec(src) || /^\$(?![\s$])((?:\\.|[^\\$\n])+?)(?<!\s)\$(?!\d)/.exec(src);
        if (match) return { type: "mathInline", raw: match[0], text: match[1], display: match[0].startsWith("$$") };
        return undefined;
      },
      renderer: (token) => `<span class="${token.display ? "math-display" : "math-inline"}">${escapeHtml(token.text)}</span>`,
    },
  ],
};

marked.use({ gfm: true, breaks: true }, MATH);

// Model output is untrusted, and so is anything a user typed that is shown as Markdown: every
// rendering goes through this one sanitiser. Only what Markdown produces is kept (plus a few
// harmless inline tags): no forms or form controls (a fake password prompt), no <style> and no
// style attributes (restyling or covering the page), no classes but code languages (reusing the
// app's own CSS, e.g. a position:fixed overlay), no ids (clobbering the app's elements), no
// media but images. The page's Content Security Policy refuses the same things again.
const SANITIZE = {
  ALLOWED_TAGS: [
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre",
    "q", "s", "samp", "small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td",
    "tfoot", "th", "thead", "tr", "u", "ul",
  ],
  ALLOWED_ATTR: ["href", "title", "alt", "src", "align", "colspan", "rowspan", "start", "open", "lang", "dir", "class"],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
};

const CODE_LANGUAGE = /^language-[\w+#.-]+$/;
const MATH_CLASSES = new Set(["math-inline", "math-display"]);

function resolve(src) {
  try {
    return new URL(src, document.baseURI);
  } catch {
    return null;
  }
}

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.hasAttribute("class")) {
    const kept = node.tagName === "CODE" ? [...node.classList].filter((name) => CODE_LANGUAGE.test(name))
      : node.tagName === "SPAN" || node.tagName === "DIV" ? [...node.classList].filter((name) => MATH_CLASSES.has(name)) : [];
    if (kept.length) node.setAttribute("class", kept.join(" "));
    else node.removeAttribute("class");
  }
  if (node.tagName === "IMG") {
    // A remote image would be fetched as soon as it is parsed, carrying whatever its URL holds
    // out of the page with no click: it becomes a link the user may follow. This runs in
    // DOMPurify's inert document, before anything reaches the page.
    const src = (node.getAttribute("src") || "").trim();
    if (/^data:image\//i.test(src)) return;
    // A relative URL ("x", "./a.png") means nothing in a reply: it would resolve against the
    // conversation's own page URL and be fetched on every render. Only a site path ("/static/…")
    // or a full URL is an image.
    if (!/^(\/(?!\/)|[a-z][a-z0-9+.-]*:|\/\/)/i.test(src)) {
      const alt = node.getAttribute("alt");
      if (alt) node.replaceWith(node.ownerDocument.createTextNode(`[${alt}]`));
      else node.remove();
      return;
    }
    const url = resolve(src);
    if (url?.origin === window.location.origin) return;
    if (url?.protocol !== "https:" && url?.protocol !== "http:") {
      node.remove();
      return;
    }
    const link = node.ownerDocument.createElement("a");
    link.setAttribute("href", url.href);
    link.textContent = `Image: ${node.getAttribute("alt") || url.href}`;
    node.replaceWith(link);
    node = link;
  }
  if (node.tagName === "A" && node.getAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

/** Colours a sanitised code block that names its language; highlight.js escapes what it reads. */
function highlight(code) {
  const name = [...code.classList].find((one) => one.startsWith("language-"))?.slice(9);
  if (!name || !hljs.getLanguage(name)) return;
  try {
    code.innerHTML = hljs.highlight(code.textContent, { language: name, ignoreIllegals: true }).value;
    code.classList.add("hljs");
  } catch {
    // a grammar that fails on this text: the block stays plain
  }
}

/** Draws a sanitised math element's TeX with KaTeX, into the page's DOM (its inline sizes are set
 * through the CSSOM, which the CSP allows). No \\href or \\url links (trust is off), bounded sizes
 * and macro expansion; TeX it cannot read stays as text, marked as an error. */
function renderMath(node) {
  const tex = node.textContent;
  try {
    katex.render(tex, node, { displayMode: node.classList.contains("math-display"), throwOnError: false, trust: false, maxSize: 20, maxExpand: 200 });
    node.classList.add("math-rendered");
  } catch {
    node.textContent = tex;
  }
}

export function renderMarkdown(target, text) {
  target.innerHTML = DOMPurify.sanitize(marked.parse(text || ""), SANITIZE);
  for (const math of target.querySelectorAll(".math-inline, .math-display")) renderMath(math);
  for (const code of target.querySelectorAll("pre > code")) highlight(code);
  for (const pre of target.querySelectorAll("pre")) {
    const copy = el("button", { type: "button", class: "copy-code", text: "Copy", "aria-label": "Copy code" });
    copy.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(pre.querySelector("code")?.textContent ?? pre.textContent);
        copy.textContent = "Copied";
      } catch {
        copy.textContent = "Copy failed";
      }
      setTimeout(() => (copy.textContent = "Copy"), 1500);
    });
    pre.prepend(copy);
  }
}

export function pretty(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") {
    // Tool results are often JSON text: indent it, but only when that changes nothing else.
    // Parsing turns 42.0 into 42 and drops digits past a double's precision; the result is
    // shown as the tool sent it then.
    try {
      const parsed = JSON.parse(value);
      if (parsed !== null && typeof parsed === "object" && !/\d\.\d*0(?!\d)|\d[eE]|\d{16,}/.test(value)) {
        return JSON.stringify(parsed, null, 2);
      }
    } catch {
      // not JSON: as it is
    }
    return value;
  }
  return JSON.stringify(value, null, 2);
}

function contentText(content) {
  if (content === null || content === undefined) return "";
  return typeof content === "string" ? content : "```json\n" + JSON.stringify(content, null, 2) + "\n```";
}

// A message longer than this (or with more lines) is shown folded, with "Show more": a pasted
// document would otherwise be a bubble thousands of pixels tall.
const FOLD_CHARS = 2000;
const FOLD_LINES = 24;

// The input a user-input field's type asks for: a number, a date picker, or text. A date's value
// is ISO text ("2026-12-07"), as the tool reads it.
const INPUT_TYPES = { int: "number", float: "number", number: "number", integer: "number", date: "date", datetime: "datetime-local" };

function inputType(fieldType) {
  return INPUT_TYPES[String(fieldType)] || "text";
}

export function userTurn(text) {
  const body = el("div", { class: "msg-body" });
  const said = el("span", { class: "msg-text" });
  said.textContent = text; // what the user typed is shown as typed, never as HTML
  body.append(said);
  if (text.length > FOLD_CHARS || text.split("\n").length > FOLD_LINES) foldable(body, said);
  return el("article", { class: "msg msg-user", "aria-label": "You said" }, body);
}

let folds = 0;

function foldable(body, said) {
  said.id = `said-${++folds}`;
  const toggle = el("button", { type: "button", class: "msg-more", "aria-controls": said.id, "aria-expanded": "false" }, "Show more");
  toggle.addEventListener("click", () => {
    const folded = body.classList.toggle("is-folded");
    toggle.setAttribute("aria-expanded", String(!folded));
    toggle.textContent = folded ? "Show more" : "Show less";
    if (folded) body.scrollIntoView({ block: "nearest" });
  });
  body.classList.add("is-folded");
  body.append(toggle);
}

const TIME = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

/** "2 Dec 2026, 05:00" for an ISO string, epoch seconds or a Date; "" for nothing. */
export function when(value) {
  if (value === null || value === undefined || value === "") return "";
  const date = typeof value === "number" ? new Date(value * 1000) : new Date(value);
  return Number.isNaN(date.getTime()) ? "" : TIME.format(date);
}

/** What a reply's hover line says: when, which model, how many tokens. */
export function metaText({ createdAt, model, metrics } = {}) {
  const parts = [when(createdAt)];
  const detail = metrics?.details?.model?.[0];
  const name = detail ? [detail.provider, detail.id].filter(Boolean).join(" · ") : model;
  if (name) parts.push(name);
  if (metrics && typeof metrics.total_tokens === "number") {
    parts.push(`${metrics.total_tokens} tokens (${metrics.input_tokens ?? 0} in, ${metrics.output_tokens ?? 0} out)`);
  }
  return parts.filter(Boolean).join(" · ");
}

/** Copies text, with the button saying how it went. */
export async function copyWithFeedback(button, text, label = "Copy") {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Copy failed";
  }
  setTimeout(() => (button.textContent = label), 1500);
}

/**
 * A stored run's tool calls in the order they were made: its ``tools``, and between them the calls
 * refused before they ran (a tool the agent does not have, arguments that are not JSON, over the
 * call limit). As in Agno those are not among ``tools``: only the run's messages keep them, as a
 * tool message with ``tool_call_error``. The stream showed them as failed cards (ToolCallError),
 * and so does a reload. Each refused call comes back as a failed tool, its refusal as the result.
 */
export function storedTools(run) {
  const tools = run.tools || [];
  const known = new Set(tools.map((tool) => tool.tool_call_id).filter(Boolean));
  const before = new Map(); // tool_call_id of a run tool -> the refused calls made before it
  let refused = [];
  for (const message of run.messages || []) {
    if (!message || message.role !== "tool" || message.from_history || !message.tool_call_id) continue;
    if (known.has(message.tool_call_id)) {
      if (refused.length) before.set(message.tool_call_id, [...(before.get(message.tool_call_id) || []), ...refused]);
      refused = [];
    } else if (message.tool_call_error) {
      refused.push({ tool_call_id: message.tool_call_id, tool_name: message.tool_name, tool_args: message.tool_args || {}, result: message.content, tool_call_error: true });
    }
  }
  return [...tools.flatMap((tool) => [...(before.get(tool.tool_call_id) || []), tool]), ...refused];
}

/** Does this paused tool still wait for the person? */
export function needsDecision(tool) {
  if (tool.requires_confirmation && (tool.confirmed === null || tool.confirmed === undefined)) return true;
  if (tool.requires_user_input && !tool.answered && (tool.user_input_schema || []).some((field) => field.value === null || field.value === undefined)) return true;
  if (tool.external_execution_required && (tool.result === null || tool.result === undefined)) return true;
  return false;
}

/** Text segments and tool cards in the order they happened: a reply's, or a team member's step's. */
class Transcript {
  constructor(body) {
    this.body = body;
    this.segment = null;
    this.segmentText = "";
    this.segments = []; // {node, text}: what was said, as Markdown, for Copy
    this.streamedText = false;
    this.tools = new Map();
    this.pending = false;
    this.reasoning = null; // {details, text}: the collapsed thinking, once there is some
  }

  appendText(delta) {
    if (!delta) return;
    if (!this.segment) {
      this.segment = el("div", { class: "md" });
      this.segmentText = "";
      this.segments.push({ node: this.segment, text: "" });
      this.body.append(this.segment);
    }
    this.segmentText += delta;
    this.segments[this.segments.length - 1].text = this.segmentText;
    this.streamedText = true;
    this.scheduleRender();
  }

  scheduleRender() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      if (this.segment) renderMarkdown(this.segment, this.segmentText);
    });
  }

  /** The model's thinking, collapsed above the answer: streamed (reasoning_content deltas) or
   *  stored. Plain text, never Markdown: it is the model's working, not its reply. */
  appendReasoning(delta) {
    if (!delta) return;
    if (!this.reasoning) {
      const text = el("div", { class: "reasoning-text" });
      const details = el("details", { class: "reasoning" },
        el("summary", {}, el("span", { class: "reasoning-label", text: "Reasoning" })), text);
      this.reasoning = { details, text };
      this.body.prepend(details);
    }
    this.reasoning.text.textContent += delta;
  }

  /** A stored run's reasoning, when none was streamed into this transcript. */
  setReasoning(text) {
    if (!this.reasoning && typeof text === "string" && text.trim()) this.appendReasoning(text.trim());
  }

  /** The full answer, when no tokens were streamed (a stored run, or a replay without deltas). */
  setFinalText(content) {
    if (this.streamedText) return;
    const text = contentText(content);
    if (!text) return;
    this.appendText(text);
  }

  closeSegment() {
    if (this.segment) renderMarkdown(this.segment, this.segmentText);
    this.segment = null;
  }

  toolCard(tool) {
    const id = tool.tool_call_id || `${tool.tool_name}-${this.tools.size}`;
    let card = this.tools.get(id);
    if (card) return card;
    this.closeSegment();
    const state = el("span", { class: "tool-state" });
    const args = el("pre", { class: "tool-args" });
    const result = el("pre", { class: "tool-result" });
    const resultBlock = el("div", { class: "tool-section", hidden: true }, el("div", { class: "tool-label", text: "Result" }), result);
    const details = el("details", { class: "tool" },
      el("summary", {}, el("span", { class: "tool-icon", "aria-hidden": "true", text: "⚙" }), " ", el("code", { text: tool.tool_name || "tool" }), " ", state),
      el("div", { class: "tool-section" }, el("div", { class: "tool-label", text: "Arguments" }), args),
      resultBlock);
    args.textContent = pretty(tool.tool_args || {});
    card = { details, state, result, resultBlock };
    this.tools.set(id, card);
    this.body.append(details);
    return card;
  }

  toolStarted(tool) {
    const card = this.toolCard(tool);
    card.details.dataset.state = "running";
    card.state.textContent = "running…";
  }

  toolFinished(tool, errorText) {
    const card = this.toolCard(tool);
    const failed = Boolean(errorText) || tool.tool_call_error === true;
    const rejected = tool.confirmed === false;
    card.details.dataset.state = rejected ? "rejected" : failed ? "error" : "done";
    card.state.textContent = rejected ? "rejected" : failed ? "failed" : "done";
    const output = errorText || tool.result;
    if (output !== null && output !== undefined && output !== "") {
      card.result.textContent = pretty(output);
      card.resultBlock.hidden = false;
    } else if (rejected) {
      card.result.textContent = tool.confirmation_note ? `Rejected: ${tool.confirmation_note}` : "Rejected: the tool did not run.";
      card.resultBlock.hidden = false;
    }
  }


  /** The stored decision on a paused tool: who made it, and when. */
  decision(tool, { by, at } = {}) {
    const verb = tool.confirmed === false ? "rejected" : tool.confirmed === true ? "approved" : tool.answered || tool.user_input_schema ? "answered" : "sent the result of";
    const who = by ? `You (${by})` : "You";
    const note = tool.confirmed === false && tool.confirmation_note ? ` “${tool.confirmation_note}”` : "";
    const stamp = when(at);
    this.closeSegment();
    this.body.append(el("p", { class: "approval-outcome approval-record", "data-decision": verb.split(" ")[0] },
      `${who} ${verb} `, el("code", { text: tool.tool_name || "the tool" }), `${note}${stamp ? ` on ${stamp}` : ""}.`));
  }
}

const EXCERPT_CHARS = 140;

/**
 * The distinct passages of the reply's runs' references (``[{runId, references: [{query,
 * references: [hit], time}]}]``: the reply's run, and its team members'), best first: a passage
 * found by two searches is listed once, with its better score. Each keeps where its run stored
 * it (``runId``, ``search``, ``hit``), which its link names when it has no stored document.
 */
export function sourceHits(groups) {
  const found = new Map();
  for (const { runId, references } of groups || []) {
    (references || []).forEach((search, searchIndex) => {
      (search?.references || []).forEach((item, hitIndex) => {
        const hit = typeof item === "string" ? { content: item } : item;
        if (!hit || typeof hit.content !== "string") return;
        const key = hit.chunk_id || `${hit.content_id || hit.name || ""}\u0000${hit.content}`;
        const known = found.get(key);
        if (!known || Number(hit.score || 0) > Number(known.score || 0)) found.set(key, { ...hit, place: { runId, search: searchIndex, hit: hitIndex } });
      });
    });
  }
  return [...found.values()].sort((a, b) => Number(b.score || 0) - Number(a.score || 0));
}

/**
 * Where a source's link goes: a passage of a stored document (a numeric chunk id and its
 * content) opens in that document, highlighted (``#chunk-<id>``); any other (a knowledge base
 * held in code) opens the passage as its run recorded it.
 */
export function sourceHref(hit, { documentsUrl, runsUrl }) {
  const enc = encodeURIComponent;
  if (hit.content_id && /^\d+$/.test(String(hit.chunk_id || ""))) {
    return `${documentsUrl}${enc(hit.content_id)}/?passage=${hit.chunk_id}#chunk-${hit.chunk_id}`;
  }
  const { runId, search, hit: index } = hit.place || {};
  return runId ? `${runsUrl}${enc(runId)}/sources/${search}/${index}/#ref-${search}-${index}` : null;
}

function sourceItem(hit, urls) {
  const passage = hit.content.trim();
  const flat = passage.replace(/\s+/g, " ");
  const excerpt = flat.length > EXCERPT_CHARS ? `${flat.slice(0, EXCERPT_CHARS).trimEnd()}…` : flat;
  const score = typeof hit.score === "number" ? hit.score.toFixed(2) : "";
  const name = hit.name || "Untitled";
  const href = sourceHref(hit, urls);
  return el("li", { class: "source" },
    el("details", {},
      el("summary", { title: "Show the whole passage" },
        el("span", { class: "source-name", text: name }),
        el("span", { class: "source-excerpt", text: excerpt }),
        score ? el("span", { class: "source-score", title: "How well it matched the search (1 is best)", "aria-label": `score ${score}`, text: score }) : null),
      el("blockquote", { class: "source-passage", text: passage })),
    href ? el("a", { class: "source-open", href, title: "The passage in its context, highlighted", "aria-label": `Open the passage of “${name}”`, text: "Open" }) : null);
}

let stepIds = 0;

/**
 * One team member's run inside the team's reply: a disclosure (its button carries aria-expanded)
 * with the member's name and status, and its own streamed text and tool calls. Open while the
 * member works or waits for a decision, folded once it is done unless the person opened it.
 */
export class MemberStep extends Transcript {
  constructor(name) {
    const id = `member-step-${++stepIds}`;
    super(el("div", { class: "step-body", id }));
    this.name = name || "Member";
    this.label = el("span", { class: "step-state" });
    this.toggle = el("button", { type: "button", class: "step-toggle", "aria-expanded": "true", "aria-controls": id },
      el("span", { class: "step-chevron", "aria-hidden": "true" }), el("span", { class: "step-name", text: this.name }), " ", this.label);
    this.toggle.addEventListener("click", () => {
      this.touched = true;
      this.expand(this.toggle.getAttribute("aria-expanded") !== "true");
    });
    this.el = el("section", { class: "member-step", "aria-label": `${this.name}'s work` }, this.toggle, this.body);
    this.touched = false; // opened or closed by the person: left as they chose it
    this.setState("running");
  }

  expand(open) {
    this.toggle.setAttribute("aria-expanded", open ? "true" : "false");
    this.body.hidden = !open;
  }

  /** running, done, paused (waiting for a decision), error, cancelled. */
  setState(state) {
    const labels = { running: "working…", done: "done", paused: "waiting for your approval", error: "failed", cancelled: "stopped" };
    this.el.dataset.state = state;
    this.label.textContent = labels[state] || state;
    if (state !== "running") this.closeSegment();
    if (!this.touched) this.expand(state === "running" || state === "paused");
  }
}

/** One assistant reply: text segments, tool cards and team members' steps in the order they happened. */
export class AssistantTurn extends Transcript {
  constructor(agentName) {
    super(el("div", { class: "msg-body" }));
    this.status = el("div", { class: "msg-status", role: "status" });
    this.actions = el("div", { class: "msg-actions" });
    this.meta = el("div", { class: "msg-meta" });
    this.el = el("article", { class: "msg msg-assistant", "aria-label": `${agentName || "Agent"} replied` },
      el("div", { class: "msg-author", text: agentName || "Agent" }), this.body, this.status,
      el("div", { class: "msg-footer" }, this.actions, this.meta));
    this.steps = new Map(); // member run id -> MemberStep
    this.stepOfTool = new Map(); // tool_call_id a member waits on -> its MemberStep
    this.onDecided = null; // (tools) => continue the run
  }

  setBusy(busy, label = "") {
    this.el.classList.toggle("is-streaming", busy);
    this.el.setAttribute("aria-busy", busy ? "true" : "false");
    this.status.replaceChildren(busy ? el("span", { class: "typing", "aria-hidden": "true" }, el("i"), el("i"), el("i")) : "", label ? el("span", { text: label }) : "");
  }

  /** The team's run ended: a member step still shown as working ended with it. */
  settleSteps(state) {
    for (const step of this.steps.values()) if (step.el.dataset.state === "running") step.setState(state);
  }

  /** The step of a member's run, added where the reply has got to when the member starts. */
  step(runId, name) {
    let step = this.steps.get(runId);
    if (step) return step;
    this.closeSegment();
    step = new MemberStep(name);
    this.steps.set(runId, step);
    this.body.append(step.el);
    return step;
  }

  /** Where this reply's stream began: restart() goes back to it. */
  checkpoint() {
    return { children: this.body.children.length, tools: new Set(this.tools.keys()), steps: new Set(this.steps.keys()) };
  }

  /** A new attempt of the run began: what its earlier attempt showed since ``mark`` is void. */
  restart(mark) {
    while (this.body.children.length > mark.children) this.body.lastElementChild.remove();
    for (const id of [...this.tools.keys()]) if (!mark.tools.has(id)) this.tools.delete(id);
    for (const id of [...this.steps.keys()]) if (!mark.steps.has(id)) this.steps.delete(id);
    this.segment = null;
    this.segmentText = "";
    this.streamedText = false;
    if (this.reasoning && !this.body.contains(this.reasoning.details)) this.reasoning = null;
  }

  error(message, heading = "Something went wrong. ") {
    this.closeSegment();
    this.body.append(el("div", { class: "msg-error", role: "alert" }, el("strong", { text: heading }), el("span", { text: message })));
  }

  /**
   * A pre- or post-hook of the run (a guardrail checking the message, say): one line that says
   * what runs and how it ended ("done", "failed", or "refused" for the check that stopped it).
   */
  hookStarted(key, label) {
    this.hooks ||= new Map();
    if (this.hooks.has(key)) return;
    this.closeSegment();
    const state = el("span", { class: "hook-state", text: "checking…" });
    const detail = el("span", { class: "hook-detail" });
    const line = el("div", { class: "msg-hook", "data-state": "running" }, el("span", { class: "hook-icon", "aria-hidden": "true", text: "🛡" }), " ", el("code", { text: label }), " ", state, " ", detail);
    this.hooks.set(key, { line, state, detail });
    this.body.append(line);
  }

  hookFinished(key, outcome, text = "") {
    const hook = this.hooks?.get(key);
    if (!hook) return;
    hook.line.dataset.state = outcome;
    hook.state.textContent = { done: "passed", error: "failed", refused: "refused", changed: "changed the message" }[outcome] || outcome;
    hook.detail.textContent = text;
  }

  /** The run ended while a hook ran: that hook is the check that refused it. */
  hooksRefused() {
    for (const [key, hook] of this.hooks || []) if (hook.line.dataset.state === "running") this.hookFinished(key, "refused");
  }

  /** The reply's text as Markdown, as the agent wrote it. */
  text() {
    return this.segments.filter(({ node }) => this.body.contains(node)).map(({ text }) => text.trim()).filter(Boolean).join("\n\n");
  }

  /** A button under the reply ("Regenerate", "Retry"); clearActions() removes these again. */
  offerAction(label, handler, { title = "" } = {}) {
    const button = el("button", { type: "button", class: "msg-action", "data-transient": "true", text: label, title });
    button.addEventListener("click", handler);
    this.actions.append(button);
    return button;
  }

  clearActions() {
    this.actions.querySelectorAll("[data-transient]").forEach((button) => button.remove());
  }

  /** Copy (the whole reply), once there is something to copy. */
  offerCopy() {
    if (this.actions.querySelector(".msg-copy") || !this.text()) return;
    const button = el("button", { type: "button", class: "msg-action msg-copy", text: "Copy", title: "Copy the whole reply", "aria-label": "Copy the reply" });
    button.addEventListener("click", () => copyWithFeedback(button, this.text()));
    this.actions.prepend(button);
  }

  /**
   * The passages the reply drew on (its runs' references, see ``sourceHits``), under it: each
   * source's name, a short excerpt and how well it matched, opening to the whole passage, and a
   * link to the passage in its context (``sourceHref``). Replaces what was shown.
   */
  setSources(groups, urls) {
    this.sources?.remove();
    this.sources = null;
    const hits = sourceHits(groups);
    if (!hits.length) return;
    const label = hits.length === 1 ? "1 source" : `${hits.length} sources`;
    this.sources = el("section", { class: "msg-sources", "aria-label": "Sources" },
      el("div", { class: "sources-label", text: `Sources · ${label}` }),
      el("ol", { class: "sources-list" }, ...hits.map((hit) => sourceItem(hit, urls))));
    this.el.insertBefore(this.sources, this.el.querySelector(".msg-footer"));
  }

  /** When the reply was written, by which model, and its token usage (shown on hover). */
  setMeta(info) {
    const text = metaText(info);
    this.meta.textContent = text;
    this.el.title = text;
    // How the reply was made: its trace (model calls, tools, members, steps) on its own page.
    if (info?.runId && !this.actions.querySelector(".msg-trace")) {
      this.actions.append(el("a", { class: "msg-action msg-trace", href: `/chat/traces/${encodeURIComponent(info.runId)}/`, text: "Trace", title: "How this reply was made: its steps on a time line" }));
    }
  }

  note(text, kind = "info") {
    this.closeSegment();
    this.body.append(el("div", { class: `msg-note msg-note-${kind}`, text }));
  }

  /**
   * A paused run: approve / reject buttons, and input fields for the values the tool asks for.
   * ``askers`` names who asks for each tool call (tool_call_id -> a team member's name).
   */
  paused(tools, { disabled = false, askers = new Map() } = {}) {
    this.closeSegment();
    // A call marked @approval is an operator's to decide (approvals.js shows it), not the user's.
    const waiting = (tools || []).filter((tool) => needsDecision(tool) && tool.approval_type !== "required");
    if (!waiting.length) return;
    const decisions = new Map();
    const panel = el("div", { class: "approval", role: "group", "aria-label": "Approval needed" });
    const finish = () => {
      if (decisions.size < waiting.length) return;
      panel.querySelectorAll("button, input, textarea").forEach((node) => (node.disabled = true));
      const chosen = (tools || []).map((tool) => decisions.get(tool) || tool);
      if (this.onDecided) this.onDecided(chosen, panel);
    };
    for (const tool of waiting) panel.append(this.approvalItem(tool, decisions, finish, disabled, askers.get(tool.tool_call_id)));
    this.body.append(panel);
    return panel;
  }

  approvalItem(tool, decisions, finish, disabled, asker) {
    const item = el("form", { class: "approval-item", novalidate: true });
    const asksInput = tool.requires_user_input && (tool.user_input_schema || []).some((field) => field.value === null || field.value === undefined);
    const external = tool.external_execution_required && (tool.result === null || tool.result === undefined);
    const who = asker || "The agent";
    const title = asksInput
      ? `${who} needs a few details to run`
      : external ? `${who} asks you to run` : `${who} wants to run`;
    item.append(el("p", { class: "approval-title" }, `${title} `, el("code", { text: tool.tool_name }), asksInput ? "." : " and needs your approval."));
    item.append(el("pre", { class: "tool-args", "aria-label": "Arguments" }, pretty(tool.tool_args || {})));
    const inputs = [];
    const uid = Math.random().toString(36).slice(2, 8);
    if (asksInput) {
      for (const field of tool.user_input_schema || []) {
        if (field.value !== null && field.value !== undefined) continue;
        const id = `in-${uid}-${field.name}`;
        const input = el("input", { id, name: field.name, required: true, type: inputType(field.field_type), step: field.field_type === "float" ? "any" : undefined, disabled });
        inputs.push({ field, input });
        item.append(el("div", { class: "field" },
          el("label", { for: id, text: field.name.replace(/_/g, " ") }),
          input,
          field.description ? el("small", { text: field.description }) : null));
      }
    }
    let resultInput = null;
    if (external) {
      const id = `res-${uid}`;
      resultInput = el("textarea", { id, rows: 3, required: true, disabled });
      item.append(el("div", { class: "field" }, el("label", { for: id, text: "Result" }), resultInput));
    }
    let noteInput = null;
    if (tool.requires_confirmation && !asksInput) {
      const id = `note-${uid}`;
      noteInput = el("input", { id, type: "text", placeholder: "Why you reject it", disabled });
      item.append(el("div", { class: "field field-note" }, el("label", { for: id, text: "Note (optional)" }), noteInput));
    }
    const decide = (decision) => {
      decisions.set(tool, decision);
      item.classList.add("is-decided");
      finish();
    };
    const actions = el("div", { class: "approval-actions" });
    if (tool.requires_confirmation && !asksInput && !external) {
      actions.append(
        el("button", { type: "button", class: "btn btn-primary", disabled, onclick: () => decide({ ...tool, confirmed: true }) }, "Approve"),
        el("button", { type: "button", class: "btn btn-secondary", disabled, onclick: () => decide({ ...tool, confirmed: false, confirmation_note: noteInput?.value.trim() || null }) }, "Reject"));
    } else {
      actions.append(el("button", { type: "submit", class: "btn btn-primary", disabled }, "Submit"));
    }
    item.addEventListener("submit", (event) => {
      event.preventDefault();
      const missing = inputs.find(({ input }) => input.value.trim() === "");
      if (missing) {
        missing.input.setAttribute("aria-invalid", "true");
        missing.input.focus();
        return;
      }
      if (resultInput && !resultInput.value.trim()) {
        resultInput.focus();
        return;
      }
      const schema = (tool.user_input_schema || []).map((field) => {
        const entry = inputs.find((one) => one.field === field);
        if (!entry) return field;
        const raw = entry.input.value.trim();
        const value = entry.input.type === "number" ? Number(raw) : raw;
        return { ...field, value };
      });
      decide({ ...tool, ...(asksInput ? { user_input_schema: schema, confirmed: tool.requires_confirmation ? true : tool.confirmed } : {}), ...(resultInput ? { result: resultInput.value.trim() } : {}) });
    });
    item.append(actions);
    return item;
  }
}
