// Export or share the open conversation: the topbar's "Share" opens a dialog with the Markdown
// and JSON exports (GET /sessions/{id}/export/…) and the conversation's share link
// (/chat/api/sessions/{id}/share: create or update, copy, stop sharing). The open conversation
// is the one the page's URL names: the chat keeps its URL in step with what it shows.
import { ApiError, request } from "./api.js";
import { copyWithFeedback } from "./render.js";

const $ = (id) => document.getElementById(id);
const SESSION_PATH = /^\/chat\/s\/([^/]+)\/$/;

const ui = {
  button: $("share-button"),
  dialog: $("share-dialog"),
  none: $("share-none"),
  body: $("share-body"),
  markdown: $("export-markdown"),
  json: $("export-json"),
  state: $("share-state"),
  linkRow: $("share-link-row"),
  link: $("share-link"),
  copy: $("share-copy"),
  create: $("share-create"),
  revoke: $("share-revoke"),
};

let sessionId = null;

function openSessionId() {
  const match = location.pathname.match(SESSION_PATH);
  return match ? decodeURIComponent(match[1]) : null;
}

const shareUrl = (id) => `/chat/api/sessions/${encodeURIComponent(id)}/share`;

function showShare(share) {
  ui.linkRow.hidden = !share;
  ui.revoke.hidden = !share;
  ui.link.value = share ? share.url : "";
  ui.create.textContent = share ? "Update the link" : "Create a link";
  ui.create.title = share ? "Share the conversation as it is now, at the same link" : "";
  ui.state.textContent = share
    ? `Anyone with this link can read a copy of this conversation as it was on ${new Date(share.shared_at).toLocaleString()}. Later messages are not shared until you update the link.`
    : "Only you can see this conversation. A link shares a read-only copy of it as it is now; you can stop sharing at any time.";
}

async function act(work) {
  for (const button of [ui.create, ui.revoke]) button.disabled = true;
  try {
    await work();
  } catch (error) {
    ui.state.textContent = error instanceof ApiError ? error.message : "Something went wrong. Try again.";
  } finally {
    for (const button of [ui.create, ui.revoke]) button.disabled = false;
  }
}

async function open() {
  sessionId = openSessionId();
  ui.none.hidden = Boolean(sessionId);
  ui.body.hidden = !sessionId;
  ui.dialog.showModal();
  if (!sessionId) return;
  const base = `/sessions/${encodeURIComponent(sessionId)}/export`;
  ui.markdown.href = `${base}/markdown`;
  ui.json.href = `${base}/json`;
  showShare(null);
  ui.state.textContent = "Checking whether it is shared…";
  await act(async () => {
    try {
      const response = await request("GET", shareUrl(sessionId));
      showShare(await response.json());
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404 && /not shared/.test(error.message))) throw error;
      showShare(null);
    }
  });
}

ui.button.addEventListener("click", open);
ui.create.addEventListener("click", () => act(async () => {
  const response = await request("PUT", shareUrl(sessionId));
  showShare(await response.json());
  ui.link.select();
}));
ui.revoke.addEventListener("click", () => act(async () => {
  await request("DELETE", shareUrl(sessionId));
  showShare(null);
  ui.state.textContent = "Stopped sharing: the link no longer works.";
}));
ui.copy.addEventListener("click", () => copyWithFeedback(ui.copy, ui.link.value, "Copy link"));
