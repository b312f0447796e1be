// What a conversation looks like: messages rendered from Markdown (sanitised), tool calls as
// collapsible cards, and the approval panel of a paused run.
// Relative URLs, not bare names: an import map would be an inline script, which the CSP refuses.
import { marked } from "../../vendor/marked/marked.esm.js";
import DOMPurify from "../../vendor/dompurify/purify.es.mjs";

marked.use({ gfm: true, breaks: true });

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

function resolve(src) {
  try {
    return new URL(src, document.baseURI);
  } catch {
    return null;
  }
}

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.hasAttribute("class")) {
    const kept = node.tagName === "CODE" ? [...node.classList].filter((name) => CODE_LANGUAGE.test(name)) : [];
    if (kept.length) node.setAttribute("class", kept.join(" "));
    else node.removeAttribute("class");
  }
  if (node.tagName === "IMG") {
    // A remote image would be fetched as soon as it is parsed, carrying whatever its URL holds
    // out of the page with no click: it becomes a link the user may follow. This runs in
    // DOMPurify's inert document, before anything reaches the page.
    const src = node.getAttribute("src") || "";
    const url = resolve(src);
    if (/^data:image\//i.test(src) || url?.origin === window.location.origin) return;
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

export function renderMarkdown(target, text) {
  target.innerHTML = DOMPurify.sanitize(marked.parse(text || ""), SANITIZE);
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
    try {
      return JSON.stringify(JSON.parse(value), null, 2); // tool results are often JSON text
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}

function contentText(content) {
  if (content === null || content === undefined) return "";
  return typeof content === "string" ? content : "```json\n" + JSON.stringify(content, null, 2) + "\n```";
}

export function userTurn(text) {
  const body = el("div", { class: "msg-body" });
  body.textContent = text; // what the user typed is shown as typed, never as HTML
  return el("article", { class: "msg msg-user", "aria-label": "You said" }, body);
}

/** Does this paused tool still wait for the person? */
export function needsDecision(tool) {
  if (tool.requires_confirmation && (tool.confirmed === null || tool.confirmed === undefined)) return true;
  if (tool.requires_user_input && !tool.answered && (tool.user_input_schema || []).some((field) => field.value === null || field.value === undefined)) return true;
  if (tool.external_execution_required && (tool.result === null || tool.result === undefined)) return true;
  return false;
}

/** One assistant reply: text segments and tool cards in the order they happened. */
export class AssistantTurn {
  constructor(agentName) {
    this.body = el("div", { class: "msg-body" });
    this.status = el("div", { class: "msg-status", role: "status" });
    this.el = el("article", { class: "msg msg-assistant", "aria-label": `${agentName || "Agent"} replied` },
      el("div", { class: "msg-author", text: agentName || "Agent" }), this.body, this.status);
    this.segment = null;
    this.segmentText = "";
    this.streamedText = false;
    this.tools = new Map();
    this.pending = false;
    this.onDecided = null; // (tools) => continue the run
  }

  setBusy(busy, label = "") {
    this.el.classList.toggle("is-streaming", busy);
    this.el.setAttribute("aria-busy", busy ? "true" : "false");
    this.status.replaceChildren(busy ? el("span", { class: "typing", "aria-hidden": "true" }, el("i"), el("i"), el("i")) : "", label ? el("span", { text: label }) : "");
  }

  appendText(delta) {
    if (!delta) return;
    if (!this.segment) {
      this.segment = el("div", { class: "md" });
      this.segmentText = "";
      this.body.append(this.segment);
    }
    this.segmentText += delta;
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

  /** The full answer, when no tokens were streamed (a stored run, or a replay without deltas). */
  setFinalText(content) {
    if (this.streamedText) return;
    const text = contentText(content);
    if (!text) return;
    this.appendText(text);
  }

  /** Where this reply's stream began: restart() goes back to it. */
  checkpoint() {
    return { children: this.body.children.length, tools: new Set(this.tools.keys()) };
  }

  /** A new attempt of the run began: what its earlier attempt showed since ``mark`` is void. */
  restart(mark) {
    while (this.body.children.length > mark.children) this.body.lastElementChild.remove();
    for (const id of [...this.tools.keys()]) if (!mark.tools.has(id)) this.tools.delete(id);
    this.segment = null;
    this.segmentText = "";
    this.streamedText = false;
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

  error(message) {
    this.closeSegment();
    this.body.append(el("div", { class: "msg-error", role: "alert" }, el("strong", { text: "Something went wrong. " }), el("span", { text: message })));
  }

  /** A button under the reply (e.g. "Regenerate"); one row of them, replaced by clearActions(). */
  offerAction(label, handler, { title = "" } = {}) {
    if (!this.actions) {
      this.actions = el("div", { class: "msg-actions" });
      this.el.append(this.actions);
    }
    const button = el("button", { type: "button", class: "msg-action", text: label, title });
    button.addEventListener("click", handler);
    this.actions.append(button);
    return button;
  }

  clearActions() {
    this.actions?.remove();
    this.actions = null;
  }

  note(text, kind = "info") {
    this.closeSegment();
    this.body.append(el("div", { class: `msg-note msg-note-${kind}`, text }));
  }

  /** A paused run: approve / reject buttons, and input fields for the values the tool asks for. */
  paused(tools, { disabled = false } = {}) {
    this.closeSegment();
    const waiting = (tools || []).filter(needsDecision);
    if (!waiting.length) return;
    const decisions = new Map();
    const panel = el("div", { class: "approval", role: "group", "aria-label": "Approval needed" });
    const finish = () => {
      if (decisions.size < waiting.length) return;
      panel.querySelectorAll("button, input, textarea").forEach((node) => (node.disabled = true));
      const chosen = (tools || []).map((tool) => decisions.get(tool) || tool);
      if (this.onDecided) this.onDecided(chosen, panel);
    };
    for (const tool of waiting) panel.append(this.approvalItem(tool, decisions, finish, disabled));
    this.body.append(panel);
    return panel;
  }

  approvalItem(tool, decisions, finish, disabled) {
    const item = el("form", { class: "approval-item", novalidate: true });
    const asksInput = tool.requires_user_input && (tool.user_input_schema || []).some((field) => field.value === null || field.value === undefined);
    const external = tool.external_execution_required && (tool.result === null || tool.result === undefined);
    const title = asksInput
      ? "The agent needs a few details to run"
      : external ? "The agent asks you to run" : "The agent wants to run";
    item.append(el("p", { class: "approval-title" }, `${title} `, el("code", { text: tool.tool_name }), asksInput ? "." : " and needs your approval."));
    item.append(el("pre", { class: "tool-args", "aria-label": "Arguments" }, pretty(tool.tool_args || {})));
    const inputs = [];
    const uid = Math.random().toString(36).slice(2, 8);
    if (asksInput) {
      for (const field of tool.user_input_schema || []) {
        if (field.value !== null && field.value !== undefined) continue;
        const id = `in-${uid}-${field.name}`;
        const numeric = ["int", "float", "number", "integer"].includes(String(field.field_type));
        const input = el("input", { id, name: field.name, required: true, type: numeric ? "number" : "text", step: field.field_type === "float" ? "any" : undefined, disabled });
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
