// The composer's attachments: files picked with the paperclip are added to My documents (the
// same /knowledge upload as that page), shown as chips above the message box with their live
// status, and named in the next message sent. Each is tagged with the conversation's session_id
// (metadata), so the conversation's documents can be found (a knowledge filter, My documents).
import { el } from "./render.js";
import { followUntilDone, isProcessing, knowledge, statusText, uploadFailure } from "./knowledge.js";

/**
 * ``root``: the composer form holding #composer-attachments, #attach and #attach-input.
 * ``sessionId()``: the open conversation's id, or null for a new one.
 */
export function setupAttachments({ root, sessionId, maxFileBytes, announce = () => {} }) {
  const list = root.querySelector("#composer-attachments");
  const button = root.querySelector("#attach");
  const input = root.querySelector("#attach-input");
  let chips = [];

  function render() {
    list.hidden = chips.length === 0;
  }

  function drop(chip) {
    chips = chips.filter((one) => one !== chip);
    chip.alive = false;
    chip.node.remove();
    render();
  }

  function paint(chip) {
    const { content, error, name } = chip;
    chip.node.dataset.status = error ? "refused" : content ? content.status : "sending";
    chip.status.textContent = error || (content ? statusText(content) : "Adding…");
    chip.node.classList.toggle("is-failed", Boolean(error) || content?.status === "failed");
    chip.node.classList.toggle("is-ready", content?.status === "completed" || content?.status === "partial");
    chip.remove.setAttribute("aria-label", `Remove “${name}” from this message`);
  }

  function attach(file) {
    const chip = { name: file.name, content: null, error: "", alive: true };
    chip.status = el("span", { class: "attachment-status" });
    chip.remove = el("button", { type: "button", class: "attachment-remove" }, "×");
    chip.node = el("li", { class: "attachment" }, el("span", { class: "attachment-name", text: file.name, title: file.name }), chip.status, chip.remove);
    chip.remove.addEventListener("click", () => {
      drop(chip);
      input.value = "";
      button.focus();
    });
    chips.push(chip);
    list.append(chip.node);
    paint(chip);
    render();
    const current = sessionId();
    chip.ready = knowledge.add({ file, ...(current ? { metadata: { session_id: current } } : {}) }).then(
      (content) => {
        chip.content = content;
        paint(chip);
        announce(`“${file.name}” was added to My documents and is being read.`);
        if (isProcessing(content)) {
          followUntilDone(content, {
            isAlive: () => chip.alive,
            onChange: (next) => {
              chip.content = next;
              paint(chip);
              if (!isProcessing(next)) announce(`“${file.name}”: ${statusText(next)}`);
            },
          }).catch(() => {});
        }
        return content;
      },
      (failure) => {
        chip.error = uploadFailure(failure, "", maxFileBytes); // the chip names the file already
        paint(chip);
        announce(uploadFailure(failure, file.name, maxFileBytes));
        return null;
      },
    );
  }

  button.addEventListener("click", () => input.click());
  input.addEventListener("change", () => {
    for (const file of input.files) attach(file);
    input.value = "";
  });
  render();

  // A file the server refused, or one it could not read, is not in My documents to search: the
  // message does not name it (its chip said why).
  const usable = () => chips.filter((chip) => !chip.error && chip.content?.status !== "failed");

  return {
    /** Until every upload still being sent has been accepted or refused (a second or so). */
    async settled() {
      await Promise.all(chips.map((chip) => chip.ready));
    },
    /** The message as sent: the text, then the names of the documents attached to it. */
    mention(text) {
      const names = usable().map((chip) => `“${chip.name}”`);
      if (!names.length) return text;
      const line = `Attached from My documents: ${names.join(", ")}`;
      return text ? `${text}\n\n${line}` : line;
    },
    /**
     * The chips go with the message that is being sent: the composer is cleared, and
     * ``link(sessionId)`` tags the uploads with the conversation once its id is known.
     */
    take() {
      const taken = usable();
      for (const chip of chips) {
        chip.alive = false;
        chip.node.remove();
      }
      chips = [];
      render();
      return {
        async link(id) {
          if (!id) return;
          for (const chip of taken) {
            const content = await chip.ready;
            if (!content || content.metadata?.session_id === id) continue;
            try {
              await knowledge.update(content.id, { metadata: { ...(content.metadata || {}), session_id: id } });
            } catch {
              // the document stays in My documents, just not tagged with this conversation
            }
          }
        },
      };
    },
  };
}
