// What the pages of the user's own records share (My memories, My learnings): the notice of a
// failed call, the editor that takes an item's place, and the confirmation before a deletion.
import { ApiError } from "./api.js";
import { el } from "./render.js";

const enc = encodeURIComponent;

// A function that shows a failed call in `notice`, with a Sign in link when the session is gone.
export function noticeShower(notice, loginUrl, signedOut = [401]) {
  return (error) => {
    const message = error instanceof ApiError ? error.message : "Something unexpected happened in the page. Reload it and try again.";
    notice.replaceChildren(el("span", { text: message }));
    if (error instanceof ApiError && signedOut.includes(error.status)) {
      notice.append(" ", el("a", { href: `${loginUrl}?next=${enc(location.pathname)}`, text: "Sign in" }));
    }
    notice.append(el("button", { type: "button", class: "notice-close", "aria-label": "Dismiss", onclick: () => (notice.hidden = true) }, "×"));
    notice.hidden = false;
  };
}

// A text editor (a form with Save and Cancel; Escape cancels). `check(text)` names what is wrong
// with the text, or nothing; `save(text)` stores it (a failure is shown in the form, `failure`
// when it is not the API's).
export function textEditor({ label, value, rows = 3, maxlength, required = false, check = () => null, save, cancel, failure }) {
  const id = `edit-${Math.random().toString(36).slice(2, 8)}`;
  const input = el("textarea", { id, class: "memory-input", rows, maxlength, required });
  input.value = value;
  const saveButton = el("button", { type: "submit", class: "btn btn-primary" }, "Save");
  const cancelButton = el("button", { type: "button", class: "btn btn-secondary", onclick: cancel }, "Cancel");
  const error = el("p", { class: "field-error small", role: "alert", hidden: true });
  const form = el("form", { class: "memory-form" }, el("label", { for: id, class: "visually-hidden", text: label }), input, error,
    el("div", { class: "memory-actions" }, saveButton, cancelButton));
  const show = (message) => {
    error.textContent = message;
    error.hidden = false;
    input.setAttribute("aria-invalid", "true");
    input.focus();
  };
  input.addEventListener("keydown", (event) => event.key === "Escape" && cancel());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const problem = check(input.value);
    if (problem) return show(problem);
    saveButton.disabled = true;
    try {
      await save(input.value);
    } catch (failed) {
      saveButton.disabled = false;
      show(failed instanceof ApiError ? failed.message : failure);
    }
  });
  return { form, input };
}

// Asks in `dialog` (its text in `textNode`) before `remove()` runs; a failure goes to `onError`.
export function confirmDeletion(dialog, textNode, text, remove, onError) {
  textNode.textContent = text;
  dialog.returnValue = "";
  dialog.onclose = async () => {
    if (dialog.returnValue !== "delete") return;
    try {
      await remove();
    } catch (failed) {
      onError(failed);
    }
  };
  dialog.showModal();
}

// One page of a list answer (AgentOS's `{data, meta}`) into `state.items` and the `list` element:
// appended after the pages shown, or in their place.
export function showPage(state, result, { page, append, list, render }) {
  state.page = page;
  state.totalPages = result.meta?.total_pages || 1;
  state.total = result.meta?.total_count ?? result.data.length;
  const fresh = result.data || [];
  state.items = append ? state.items.concat(fresh) : fresh;
  if (append) list.append(...fresh.map(render));
  else list.replaceChildren(...fresh.map(render));
}
