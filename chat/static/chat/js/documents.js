// My documents: the signed-in user's knowledge contents, to add (files, web pages, notes),
// follow while they are read, refresh, delete and search. Through AgentOS's /knowledge API with
// the Django session, which binds every call to the user's own contents.
import { ApiError } from "./api.js";
import { el } from "./render.js";
import { followUntilDone, humanSize, isProcessing, kindOf, knowledge, statusText, uploadFailure } from "./knowledge.js";

const config = JSON.parse(document.getElementById("chat-config").textContent);
const PAGE = 20;
const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;

const ui = {
  notice: $("documents-notice"),
  drop: $("documents-drop"),
  file: $("documents-file"),
  pick: $("documents-pick"),
  max: $("documents-max"),
  urlForm: $("documents-url-form"),
  url: $("documents-url"),
  urlError: $("documents-url-error"),
  textForm: $("documents-text-form"),
  textName: $("documents-text-name"),
  text: $("documents-text"),
  textError: $("documents-text-error"),
  uploads: $("documents-uploads"),
  searchForm: $("documents-search-form"),
  search: $("documents-search"),
  searchStatus: $("documents-search-status"),
  results: $("documents-results"),
  list: $("documents-list"),
  count: $("documents-count"),
  empty: $("documents-empty"),
  more: $("documents-more"),
  live: $("documents-live"),
  dialog: $("document-delete-dialog"),
  dialogName: $("document-delete-name"),
};
const state = { rows: new Map(), page: 1, totalPages: 1, total: 0 };

function announce(text) {
  ui.live.textContent = "";
  // A fresh text node each time: screen readers announce a change, not a repeat of the same text.
  setTimeout(() => (ui.live.textContent = text), 30);
}

function showNotice(error) {
  const signedOut = error instanceof ApiError && (error.status === 401 || error.status === 403);
  const message = error instanceof ApiError ? error.message : "Something unexpected happened in the page. Reload it and try again.";
  ui.notice.replaceChildren(el("span", { text: message }));
  if (signedOut) ui.notice.append(" ", el("a", { href: `${config.loginUrl}?next=${enc(location.pathname)}`, text: "Sign in" }));
  ui.notice.append(el("button", { type: "button", class: "notice-close", "aria-label": "Dismiss", onclick: () => (ui.notice.hidden = true) }, "×"));
  ui.notice.hidden = false;
}

function added(iso) {
  if (!iso) return "";
  return `Added ${new Date(iso).toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" })}`;
}

const label = (content) => content.name || content.file_name || content.url || "Untitled";

// ---- one document ------------------------------------------------------------------------------

function statusClass(content) {
  return { processing: "is-processing", failed: "is-failed", completed: "is-ready", partial: "is-ready" }[content.status] || "";
}

function row(content) {
  const name = label(content);
  const title = content.url
    ? el("a", { class: "document-name", href: content.url, rel: "noopener noreferrer", target: "_blank", text: name })
    : el("span", { class: "document-name", text: name });
  const meta = el("p", { class: "document-meta muted small" },
    el("span", { class: "document-kind", text: kindOf(content) }),
    content.size ? el("span", { class: "document-size", text: humanSize(content.size) }) : null,
    el("time", { datetime: content.created_at || "", text: added(content.created_at) }));
  if (content.chunk_count) {
    meta.append(el("a", { class: "document-passages", href: `${config.documentsUrl}${enc(content.id)}/`, "aria-label": `Show the passages of “${name}”`, text: "Show passages" }));
  }
  const sessionId = content.metadata?.session_id;
  if (typeof sessionId === "string" && sessionId) {
    meta.append(el("a", { class: "document-session", href: `${config.sessionUrl}${enc(sessionId)}/`, text: "From a conversation" }));
  }
  const status = el("p", { class: `document-status ${statusClass(content)}`, text: statusText(content) });
  const refresh = el("button", { type: "button", class: "btn btn-secondary document-refresh", "aria-label": `Refresh “${name}”`, disabled: isProcessing(content) }, "Refresh");
  const remove = el("button", { type: "button", class: "btn btn-secondary document-delete", "aria-label": `Delete “${name}”` }, "Delete");
  // An anchor per document (#document-<id>): an answer's source links here.
  const item = el("li", { class: "document", id: `document-${content.id}`, "data-content-id": content.id, "data-status": content.status },
    el("div", { class: "document-main" }, title, meta, status),
    el("div", { class: "document-actions" }, refresh, remove));

  refresh.addEventListener("click", async () => {
    refresh.disabled = true;
    try {
      const fresh = await knowledge.refresh(content.id);
      replace(fresh, { focus: ".document-delete" });
      announce(`“${name}” is being read again.`);
    } catch (error) {
      refresh.disabled = false;
      showNotice(error);
    }
  });
  remove.addEventListener("click", () => {
    ui.dialogName.textContent = name;
    ui.dialog.returnValue = "";
    ui.dialog.onclose = async () => {
      if (ui.dialog.returnValue !== "delete") return remove.focus();
      try {
        await knowledge.remove(content.id);
        const next = item.nextElementSibling || item.previousElementSibling;
        item.remove();
        state.rows.delete(content.id);
        state.total = Math.max(0, state.total - 1);
        renderCount();
        announce(`“${name}” was deleted.`);
        (next?.querySelector(".document-delete") || ui.pick).focus();
      } catch (error) {
        showNotice(error);
      }
    };
    ui.dialog.showModal();
  });
  return item;
}

/** Puts a content's row in the list (replacing its old one), and follows it while it is read. */
function replace(content, { prepend = false, focus = null } = {}) {
  const fresh = row(content);
  const old = state.rows.get(content.id)?.node;
  if (old && old.isConnected) old.replaceWith(fresh);
  else if (prepend) {
    ui.list.prepend(fresh);
    state.total += 1;
  } else ui.list.append(fresh);
  const entry = { node: fresh, content };
  state.rows.set(content.id, entry);
  if (focus) fresh.querySelector(focus)?.focus();
  if (isProcessing(content)) follow(entry);
  renderCount();
  return fresh;
}

const FOCUSABLE = [".document-refresh", ".document-delete", ".document-name", ".document-session"];

function follow(entry) {
  const alive = () => state.rows.get(entry.content.id) === entry && entry.node.isConnected;
  followUntilDone(entry.content, {
    isAlive: alive,
    onChange: (next) => {
      if (!alive()) return;
      // The row is drawn anew: a keyboard user's focus stays on the same button of it.
      const focused = FOCUSABLE.find((selector) => entry.node.querySelector(selector) === document.activeElement);
      const fresh = row(next);
      entry.node.replaceWith(fresh);
      entry.node = fresh;
      entry.content = next;
      if (focused) fresh.querySelector(focused)?.focus();
      if (!isProcessing(next)) announce(`“${label(next)}”: ${statusText(next)}`);
    },
  }).catch(() => {});
}

function renderCount() {
  ui.count.textContent = state.total === 1 ? "1 document" : `${state.total} documents`;
  ui.empty.hidden = ui.list.children.length > 0;
  ui.more.hidden = state.page >= state.totalPages;
}

async function load({ append = false } = {}) {
  const page = append ? state.page + 1 : 1;
  const result = await knowledge.list({ page, limit: PAGE });
  state.page = page;
  state.totalPages = result.meta?.total_pages || 1;
  state.total = result.meta?.total_count ?? (result.data || []).length;
  if (!append) {
    ui.list.replaceChildren();
    state.rows.clear();
  }
  for (const content of result.data || []) {
    if (state.rows.has(content.id) && state.rows.get(content.id).node.isConnected) continue; // added on this page meanwhile
    replace(content);
  }
  renderCount();
}

// ---- adding ------------------------------------------------------------------------------------

/** One addition (a file, a page, a note): "Adding…" while it is sent, then its row, or why not. */
async function add(name, fields) {
  const pending = el("li", { class: "upload is-sending", role: "status" }, el("span", { text: `Adding “${name}”…` }));
  ui.uploads.append(pending);
  try {
    const content = await knowledge.add(fields);
    pending.remove();
    const existed = state.rows.has(content.id);
    replace(content, { prepend: !existed });
    announce(existed ? `“${name}” is already in your documents.` : `“${name}” was added and is being read.`);
    return content;
  } catch (error) {
    const close = el("button", { type: "button", class: "notice-close", "aria-label": `Dismiss the message about “${name}”` }, "×");
    const failed = el("li", { class: "upload is-failed", role: "alert" }, el("span", { text: uploadFailure(error, name, config.maxFileBytes) }), close);
    close.addEventListener("click", () => {
      failed.remove();
      ui.pick.focus();
    });
    pending.replaceWith(failed);
    return null;
  }
}

function addFiles(files) {
  // One request per file, one after another: each gets its own answer (and its own 413 or 422).
  return [...files].reduce((chain, file) => chain.then(() => add(file.name, { file })), Promise.resolve());
}

function fieldError(input, error, message) {
  error.textContent = message || "";
  error.hidden = !message;
  if (message) {
    input.setAttribute("aria-invalid", "true");
    input.focus();
  } else input.removeAttribute("aria-invalid");
}

function bindAdding() {
  ui.max.textContent = humanSize(config.maxFileBytes);
  ui.pick.addEventListener("click", () => ui.file.click());
  ui.file.addEventListener("change", () => {
    const files = [...ui.file.files];
    ui.file.value = "";
    addFiles(files);
  });
  // Drag and drop: the zone says it takes the files while they are over it.
  let depth = 0;
  ui.drop.addEventListener("dragenter", (event) => {
    event.preventDefault();
    depth += 1;
    ui.drop.classList.add("is-over");
  });
  ui.drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    if (event.dataTransfer) event.dataTransfer.dropEffect = "copy";
  });
  ui.drop.addEventListener("dragleave", () => {
    depth = Math.max(0, depth - 1);
    if (!depth) ui.drop.classList.remove("is-over");
  });
  ui.drop.addEventListener("drop", (event) => {
    event.preventDefault();
    depth = 0;
    ui.drop.classList.remove("is-over");
    const files = event.dataTransfer?.files;
    if (files && files.length) addFiles(files);
  });
  // A file dropped next to the zone must not navigate the page away to the file.
  window.addEventListener("dragover", (event) => event.preventDefault());
  window.addEventListener("drop", (event) => event.preventDefault());

  ui.urlForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const url = ui.url.value.trim();
    let valid = false;
    try {
      valid = ["http:", "https:"].includes(new URL(url).protocol);
    } catch {
      valid = false;
    }
    if (!valid) return fieldError(ui.url, ui.urlError, "Enter the page's full address, starting with http:// or https://.");
    fieldError(ui.url, ui.urlError, "");
    ui.url.value = "";
    await add(url, { url });
  });
  ui.textForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = ui.text.value.trim();
    if (!text) return fieldError(ui.text, ui.textError, "Write the note's text first.");
    fieldError(ui.text, ui.textError, "");
    const name = ui.textName.value.trim() || text.split("\n")[0].slice(0, 60);
    ui.text.value = "";
    ui.textName.value = "";
    await add(name, { text_content: text, name });
  });
}

// ---- search ------------------------------------------------------------------------------------

function bindSearch() {
  let token = 0;
  ui.searchForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = ui.search.value.trim();
    const mine = ++token;
    if (!text) {
      ui.results.hidden = true;
      ui.results.replaceChildren();
      ui.searchStatus.textContent = "";
      return;
    }
    ui.searchStatus.textContent = "Searching…";
    try {
      const found = await knowledge.search(text);
      if (mine !== token) return;
      const hits = found.data || [];
      ui.results.replaceChildren(...hits.map((hit) => el("li", { class: "passage" },
        el("p", { class: "passage-source small" },
          el("a", { class: "passage-name", href: `${config.documentsUrl}${enc(hit.content_id)}/?passage=${enc(hit.id)}#chunk-${enc(hit.id)}`, text: hit.name || hit.content_origin || "A document" }),
          hit.meta_data?.page ? el("span", { class: "muted", text: ` · page ${hit.meta_data.page}` }) : null),
        el("blockquote", { class: "passage-text", text: hit.content }))));
      ui.results.hidden = hits.length === 0;
      ui.searchStatus.textContent = hits.length === 0
        ? "No passage of your documents matches."
        : hits.length === 1 ? "1 passage found." : `${hits.length} passages found.`;
    } catch (error) {
      if (mine !== token) return;
      ui.searchStatus.textContent = "";
      showNotice(error);
    }
  });
}

/** A link to one document (#document-<id>) shows it, even when it is not on the first page. */
async function showLinked() {
  const match = /^#document-(.+)$/.exec(location.hash);
  if (!match) return;
  const id = decodeURIComponent(match[1]);
  let entry = state.rows.get(id);
  if (!entry) {
    try {
      const content = await knowledge.get(id);
      const node = replace(content);
      ui.list.prepend(node);
      entry = state.rows.get(id);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) showNotice(new ApiError("That document doesn't exist any more, or it isn't yours.", 404));
      else showNotice(error);
      return;
    }
  }
  for (const other of ui.list.querySelectorAll(".is-linked")) other.classList.remove("is-linked");
  entry.node.classList.add("is-linked");
  entry.node.scrollIntoView({ block: "center" });
  announce(`Showing “${label(entry.content)}”.`);
}

function start() {
  bindAdding();
  bindSearch();
  ui.more.addEventListener("click", () => load({ append: true }).catch(showNotice));
  window.addEventListener("hashchange", () => showLinked().catch(showNotice));
  load()
    .then(showLinked)
    .catch(showNotice)
    .finally(() => (document.body.dataset.ready = "true"));
}

start();
