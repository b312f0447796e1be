// My learnings: what agents with learning on learned about the signed-in user (Agno v3's
// LearningMachine), to read, correct and delete, through the /learnings API with the Django
// session, which binds every call to the user's own records and the shared ones.
import { getJSON, query, request } from "./api.js";
import { confirmDeletion, noticeShower, showPage, textEditor } from "./my_pages.js";
import { el } from "./render.js";

const config = JSON.parse(document.getElementById("chat-config").textContent);
const PAGE = 50;
const enc = encodeURIComponent;
const $ = (id) => document.getElementById(id);
const TYPES = {
  user_memory: "Memories", user_profile: "Profile", entity_memory: "Entity", session_context: "Session context", decision_log: "Decision",
};

const ui = {
  list: $("learnings-list"), empty: $("learnings-empty"), more: $("learnings-more"), count: $("learnings-count"),
  notice: $("learnings-notice"), dialog: $("learning-delete-dialog"), dialogText: $("learning-delete-text"),
};
const state = { items: [], page: 1, totalPages: 1, total: 0 };

const api = {
  list: (page) => getJSON(query("/learnings", { limit: PAGE, page, sort_by: "updated_at", sort_order: "desc" })),
  update: (learning, content) => request("PATCH", `/learnings/${enc(learning.learning_id)}`, { json: { content } }).then((r) => r.json()),
  remove: (learning) => request("DELETE", `/learnings/${enc(learning.learning_id)}`),
};

const showNotice = noticeShower(ui.notice, config.loginUrl);

function title(learning) {
  const kind = TYPES[learning.learning_type] || learning.learning_type;
  if (learning.learning_type === "entity_memory") return `${kind}: ${learning.entity_type} ${learning.entity_id} (${learning.namespace})`;
  return kind;
}

function memoriesOf(learning) {
  const entries = learning.content && Array.isArray(learning.content.memories) ? learning.content.memories : null;
  return entries && entries.every((entry) => entry && typeof entry.content === "string") ? entries : null;
}

// A memory of a user_memory record: edited or deleted by replacing the record's content.
function memoryItem(learning, entry, rerender) {
  const text = el("p", { class: "memory-text", text: entry.content });
  const edit = el("button", { type: "button", class: "btn btn-secondary memory-edit", "aria-label": `Edit “${entry.content}”` }, "Edit");
  const remove = el("button", { type: "button", class: "btn btn-secondary memory-delete", "aria-label": `Forget “${entry.content}”` }, "Forget");
  const row = el("li", { class: "learned-memory" }, text, el("div", { class: "memory-actions" }, edit, remove));
  const save = async (memories) => {
    const saved = await api.update(learning, { ...learning.content, memories });
    Object.assign(learning, saved);
    rerender();
  };
  edit.addEventListener("click", () => {
    const { form, input } = textEditor({
      label: "Learned memory", value: entry.content, rows: 2, required: true, cancel: rerender,
      check: (value) => (value.trim() ? null : "A memory can't be empty. Forget it instead."),
      failure: "The memory could not be saved.",
      save: (value) => save(memoriesOf(learning).map((one) => (one === entry ? { ...one, content: value.trim() } : one))),
    });
    row.replaceChildren(form);
    input.focus();
  });
  remove.addEventListener("click", () => save(memoriesOf(learning).filter((one) => one !== entry)).catch(showNotice));
  return row;
}

// What an entity or a decision says, in words (Agno's EntityMemory and DecisionLog shapes); null
// for any other record, or content of another shape.
function summary(learning) {
  const content = learning.content || {};
  const text = (value) => (typeof value === "string" ? value : value && typeof value.content === "string" ? value.content : null);
  if (learning.learning_type === "entity_memory") {
    const facts = (Array.isArray(content.facts) ? content.facts : []).filter((fact) => text(fact) && !fact.superseded_at).map(text);
    const events = (Array.isArray(content.events) ? content.events : []).map(text).filter(Boolean);
    const name = [content.name || learning.entity_id, content.description].filter(Boolean).join(": ");
    return el("div", { class: "learning-summary" },
      el("p", { class: "learning-name", text: content.archived_at ? `${name} (archived)` : name }),
      ...(facts.length ? [el("ul", { class: "learning-facts", "aria-label": "Facts" }, ...facts.map((fact) => el("li", { text: fact })))] : []),
      ...(events.length ? [el("ul", { class: "learning-events", "aria-label": "Events" }, ...events.map((event) => el("li", { text: event })))] : []));
  }
  if (learning.learning_type === "decision_log" && typeof content.decision === "string") {
    const lines = [["Decision", content.decision], ["Reasoning", content.reasoning], ["Outcome", content.outcome]].filter(([, value]) => value);
    return el("dl", { class: "learning-summary learning-decision" }, ...lines.flatMap(([label, value]) => [el("dt", { text: label }), el("dd", { text: String(value) })]));
  }
  return null;
}

// Any other record: its content as JSON (under its summary, if it has one), edited as JSON (an
// Edit button for the record's owner).
function contentBlock(learning, rerender) {
  const json = el("pre", { class: "learning-content", text: JSON.stringify(learning.content, null, 2) });
  const said = summary(learning);
  const shown = said ? el("div", {}, said, el("details", { class: "learning-json" }, el("summary", { text: "Content (JSON)" }), json)) : json;
  if (!learning.user_id) return { nodes: [shown], edit: null };
  const edit = el("button", { type: "button", class: "btn btn-secondary learning-edit", "aria-label": `Edit ${title(learning)}` }, "Edit");
  edit.addEventListener("click", () => {
    const parse = (value) => {
      try {
        const content = JSON.parse(value);
        return content && typeof content === "object" && !Array.isArray(content) ? content : null;
      } catch {
        return null;
      }
    };
    const { form, input } = textEditor({
      label: "Content (JSON)", value: JSON.stringify(learning.content, null, 2), rows: 6, cancel: rerender,
      check: (value) => (parse(value) ? null : "The content must be a JSON object."),
      failure: "The learning could not be saved.",
      save: async (value) => {
        Object.assign(learning, await api.update(learning, parse(value)));
        rerender();
      },
    });
    shown.replaceWith(form);
    edit.parentElement.hidden = true;
    input.focus();
  });
  return { nodes: [shown], edit };
}

function item(learning) {
  const row = el("li", { class: "memory learning", "data-learning-id": learning.learning_id });
  const rerender = () => row.replaceWith(item(learning));
  const memories = learning.learning_type === "user_memory" ? memoriesOf(learning) : null;
  const block = memories
    ? { nodes: [el("ul", { class: "learned-memories", "aria-label": "Learned memories" }, ...memories.map((entry) => memoryItem(learning, entry, rerender)))], edit: null }
    : contentBlock(learning, rerender);
  const head = el("h2", { class: "learning-title", text: title(learning) });
  const meta = el("p", { class: "memory-meta muted small", text: learning.user_id ? (learning.agent_id ? `Learned by ${learning.agent_id}` : "") : "Shared (no owner)" });
  row.append(head, meta, ...block.nodes);
  if (learning.user_id) {
    // A memories record is forgotten whole; any other record is deleted.
    const label = memories ? "Forget all" : "Delete";
    const remove = el("button", { type: "button", class: "btn btn-secondary learning-delete", "aria-label": `Delete ${title(learning)}` }, label);
    remove.addEventListener("click", () => confirmDeletion(ui.dialog, ui.dialogText, title(learning), async () => {
      await api.remove(learning);
      state.items = state.items.filter((one) => one !== learning);
      state.total = Math.max(0, state.total - 1);
      row.remove();
      renderCount();
    }, showNotice));
    row.append(el("div", { class: "memory-actions learning-actions" }, block.edit, remove));
  }
  return row;
}

function renderCount() {
  ui.count.textContent = state.total === 1 ? "1 learning" : `${state.total} learnings`;
  ui.empty.hidden = state.items.length > 0;
  ui.more.hidden = state.page >= state.totalPages;
}

async function load({ append = false } = {}) {
  const page = append ? state.page + 1 : 1;
  const result = await api.list(page);
  showPage(state, result, { page, append, list: ui.list, render: item });
  renderCount();
}

ui.more.addEventListener("click", () => load({ append: true }).catch(showNotice));
load()
  .catch(showNotice)
  .finally(() => (document.body.dataset.ready = "true"));
