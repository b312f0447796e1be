// Thumbs up or down, with an optional comment, under each finished reply. Stored per run by the
// chat's own endpoint (/chat/api/runs/{run_id}/feedback); a reopened conversation shows the
// ratings again, read once per conversation (/chat/api/sessions/{session_id}/feedback).
import { getJSON, request } from "./api.js";
import { el } from "./render.js";

const enc = encodeURIComponent;
const COMMENT_MAX = 2000;
const byConversation = new Map(); // session id -> Promise<Map<run id, feedback>>

// Its own stylesheet, so the chat page's template and chat.css stay as they are.
if (!document.querySelector("link[data-feedback-css]")) {
  document.head.append(el("link", { rel: "stylesheet", href: new URL("../css/feedback.css", import.meta.url).href, "data-feedback-css": "" }));
}

function ratings(sessionId) {
  if (!byConversation.has(sessionId)) {
    const loaded = getJSON(`/chat/api/sessions/${enc(sessionId)}/feedback`)
      .then((body) => new Map((body.data || []).map((item) => [item.run_id, item])))
      .catch(() => new Map()); // the controls still work; they just start unset
    byConversation.set(sessionId, loaded);
  }
  return byConversation.get(sessionId);
}

async function remember(sessionId, runId, feedback) {
  const known = await ratings(sessionId);
  if (feedback) known.set(runId, feedback);
  else known.delete(runId);
}

const THUMB_UP = "M7 10v11H3V10h4zm2 11h8.3a2 2 0 0 0 2-1.6l1.3-7A2 2 0 0 0 18.6 10H14V5.5A2.5 2.5 0 0 0 11.5 3L9 10v11z";
const THUMB_DOWN = "M17 14V3h4v11h-4zm-2-11H6.7a2 2 0 0 0-2 1.6l-1.3 7A2 2 0 0 0 5.4 14H10v4.5a2.5 2.5 0 0 0 2.5 2.5L15 14V3z";

function thumb(path) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  const shape = document.createElementNS("http://www.w3.org/2000/svg", "path");
  shape.setAttribute("d", path);
  svg.append(shape);
  return svg;
}

/**
 * Rating controls under a reply. ``run`` is a stored run ({run_id, status, session_id}) or the
 * page's live run ({runId, sessionId}); only finished answers (COMPLETED) can be rated.
 */
export function renderFeedback(turnEl, run) {
  const runId = run?.run_id ?? run?.runId;
  const sessionId = run?.session_id ?? run?.sessionId;
  if (!turnEl || !runId || !sessionId || (run.status && run.status !== "COMPLETED")) return null;
  turnEl.querySelector(":scope > .msg-feedback")?.remove();

  let current = null; // the stored feedback, or null
  const up = el("button", { type: "button", class: "fb-thumb fb-up", "aria-pressed": "false", "aria-label": "Good reply", title: "Good reply" }, thumb(THUMB_UP));
  const down = el("button", { type: "button", class: "fb-thumb fb-down", "aria-pressed": "false", "aria-label": "Bad reply", title: "Bad reply" }, thumb(THUMB_DOWN));
  const status = el("span", { class: "fb-status", role: "status" });
  const uid = Math.random().toString(36).slice(2, 8);
  const text = el("textarea", { id: `fb-${uid}`, class: "fb-text", rows: 2, maxlength: COMMENT_MAX });
  const label = el("label", { for: `fb-${uid}`, class: "fb-label" });
  const cancel = el("button", { type: "button", class: "btn btn-secondary fb-cancel" }, "Cancel");
  const form = el("form", { class: "fb-form", hidden: true }, label, text,
    el("div", { class: "fb-form-actions" }, el("button", { type: "submit", class: "btn btn-primary fb-send" }, "Send"), cancel));
  const said = el("p", { class: "fb-comment", hidden: true });
  const edit = el("button", { type: "button", class: "btn-link fb-edit", hidden: true }, "Edit comment");
  const box = el("div", { class: "msg-feedback", role: "group", "aria-label": "Rate this reply", "data-run-id": runId },
    el("div", { class: "fb-row" }, up, down, status, edit), said, form);

  const show = (feedback) => {
    current = feedback || null;
    box.dataset.rating = current?.rating || "";
    up.setAttribute("aria-pressed", String(current?.rating === "up"));
    down.setAttribute("aria-pressed", String(current?.rating === "down"));
    said.textContent = current?.comment ? `“${current.comment}”` : "";
    said.hidden = !current?.comment || !form.hidden;
    edit.hidden = !current || !form.hidden;
    edit.textContent = current?.comment ? "Edit comment" : "Add a comment";
  };
  const openForm = () => {
    label.textContent = current?.rating === "down" ? "What was wrong with it? (optional)" : "Anything to add? (optional)";
    text.value = current?.comment || "";
    form.hidden = false;
    show(current);
    text.focus();
  };
  const closeForm = () => {
    form.hidden = true;
    show(current);
  };
  const save = async (rating, comment) => {
    status.textContent = "Saving…";
    try {
      const response = await request("PUT", `/chat/api/runs/${enc(runId)}/feedback`, { json: { rating, comment } });
      const saved = await response.json();
      await remember(sessionId, runId, saved);
      show(saved);
      status.textContent = "Thanks for your feedback.";
      return true;
    } catch (error) {
      status.textContent = error.message || "Your feedback could not be saved.";
      return false;
    }
  };
  const withdraw = async () => {
    status.textContent = "Saving…";
    try {
      await request("DELETE", `/chat/api/runs/${enc(runId)}/feedback`);
      await remember(sessionId, runId, null);
      form.hidden = true;
      show(null);
      status.textContent = "Feedback removed.";
    } catch (error) {
      status.textContent = error.message || "Your feedback could not be removed.";
    }
  };
  const rate = async (rating) => {
    if (current?.rating === rating) return withdraw(); // pressing the lit thumb again takes it back
    if (await save(rating, current?.comment || "") && rating === "down") openForm(); // a thumbs-down asks why
  };
  up.addEventListener("click", () => rate("up"));
  down.addEventListener("click", () => rate("down"));
  edit.addEventListener("click", openForm);
  cancel.addEventListener("click", closeForm);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (await save(current?.rating || "down", text.value.trim())) closeForm();
  });
  text.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation(); // not the page's Esc (stop a reply)
      closeForm();
    }
  });

  turnEl.append(box);
  show(null);
  ratings(sessionId).then((known) => {
    if (known.has(runId) && box.isConnected && !current) show(known.get(runId));
  });
  return box;
}
