// My memories: what the agents remember about the signed-in user, to read, correct and delete.
// Through AgentOS's own /memories API with the Django session, which binds every call to the
// user's own memories (user_id rides along, as on the chat page, and the server overrides it).
import { getJSON, query, request } from "./api.js";
import { confirmDeletion, noticeShower, showPage, textEditor } from "./my_pages.js";
import { el } from "./render.js";

const config = JSON.parse(document.getElementById("chat-config").textContent);
const who = { user_id: config.user };
const PAGE = 50;
const MAX_CHARS = 5000;
const enc = encodeURIComponent;
const $ = (id) => document.getElementById(id);

const ui = {
  list: $("memories-list"),
  empty: $("memories-empty"),
  more: $("memories-more"),
  count: $("memories-count"),
  search: $("memories-search"),
  notice: $("memories-notice"),
  dialog: $("memory-delete-dialog"),
  dialogText: $("memory-delete-text"),
};
const state = { items: [], page: 1, totalPages: 1, total: 0, search: "", token: 0 };

const api = {
  list: ({ page, search }) =>
    getJSON(query("/memories", { ...who, limit: PAGE, page, sort_by: "updated_at", sort_order: "desc", search_content: search })),
  // PATCH takes the whole memory (AgentOS's UserMemoryCreateSchema): the text and its topics.
  update: (memory, text) =>
    request("PATCH", query(`/memories/${enc(memory.memory_id)}`, who), { json: { memory: text, topics: memory.topics || [], ...who } }).then((r) => r.json()),
  remove: (memory) => request("DELETE", query(`/memories/${enc(memory.memory_id)}`, who)),
};

const showNotice = noticeShower(ui.notice, config.loginUrl, [401, 403]);

function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return `Updated ${date.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" })}`;
}

function item(memory) {
  const text = el("p", { class: "memory-text", text: memory.memory });
  const topics = (memory.topics || []).length
    ? el("ul", { class: "memory-topics", "aria-label": "Topics" }, ...(memory.topics || []).map((topic) => el("li", { text: topic })))
    : null;
  const meta = el("p", { class: "memory-meta muted small" }, el("time", { datetime: memory.updated_at || "", text: when(memory.updated_at) }));
  const edit = el("button", { type: "button", class: "btn btn-secondary memory-edit", "aria-label": `Edit “${memory.memory}”` }, "Edit");
  const remove = el("button", { type: "button", class: "btn btn-secondary memory-delete", "aria-label": `Delete “${memory.memory}”` }, "Delete");
  const actions = el("div", { class: "memory-actions" }, edit, remove);
  const row = el("li", { class: "memory", "data-memory-id": memory.memory_id }, text, topics, meta, actions);

  edit.addEventListener("click", () => {
    const close = () => row.replaceWith(item(memory));
    const { form, input } = textEditor({
      label: "Memory", value: memory.memory, maxlength: MAX_CHARS, required: true, cancel: close,
      check: (text) => (text.trim() ? null : "A memory can't be empty. Delete it instead."),
      failure: "The memory could not be saved.",
      save: async (text) => {
        Object.assign(memory, await api.update(memory, text.trim()));
        const fresh = item(memory);
        row.replaceWith(fresh);
        fresh.querySelector(".memory-edit").focus();
      },
    });
    row.replaceChildren(form);
    input.focus();
  });

  remove.addEventListener("click", () => confirmDeletion(ui.dialog, ui.dialogText, memory.memory, async () => {
    await api.remove(memory);
    state.items = state.items.filter((one) => one !== memory);
    state.total = Math.max(0, state.total - 1);
    row.remove();
    renderCount();
    (ui.list.querySelector(".memory-edit") || ui.search).focus();
  }, showNotice));
  return row;
}

function renderCount() {
  ui.count.textContent = state.total === 1 ? "1 memory" : `${state.total} memories`;
  ui.empty.hidden = state.items.length > 0;
  ui.empty.textContent = state.search
    ? "No memory matches your search."
    : "The agents remember nothing about you yet. When you tell one something worth keeping (“My name is Ada”, “I like green tea”), it appears here.";
  ui.more.hidden = state.page >= state.totalPages;
}

async function load({ append = false } = {}) {
  const token = ++state.token;
  const page = append ? state.page + 1 : 1;
  const result = await api.list({ page, search: state.search });
  if (token !== state.token) return; // a newer search won
  showPage(state, result, { page, append, list: ui.list, render: item });
  renderCount();
}

function start() {
  let timer;
  ui.search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      state.search = ui.search.value.trim();
      load().catch(showNotice);
    }, 250);
  });
  ui.more.addEventListener("click", () => load({ append: true }).catch(showNotice));
  load()
    .catch(showNotice)
    .finally(() => (document.body.dataset.ready = "true"));
}

start();
