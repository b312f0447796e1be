// A shared conversation: the snapshot its owner shared, drawn read-only with the chat's own
// renderer (Markdown sanitised by DOMPurify, code highlighted, math by KaTeX), and nothing else.
import { AssistantTurn, userTurn, when } from "./render.js";

const STATES = { COMPLETED: "done", ERROR: "error", CANCELLED: "cancelled", PAUSED: "paused" };

function reply(message) {
  const turn = new AssistantTurn(message.name);
  (message.members || []).forEach((member, index) => {
    const step = turn.step(`member-${index}`, member.name);
    step.setFinalText(member.content);
    step.setState(STATES[member.status] || "done");
  });
  for (const tool of message.tools || []) {
    turn.toolFinished({ tool_name: tool.name, tool_args: tool.args, result: tool.result, tool_call_error: tool.state === "failed", confirmed: tool.state === "rejected" ? false : undefined });
  }
  if (message.status === "ERROR") turn.error(message.content);
  else turn.setFinalText(message.content);
  turn.closeSegment();
  if (message.status === "CANCELLED") turn.note("Stopped", "stopped");
  turn.meta.textContent = when(message.created_at);
  return turn.el;
}

function draw() {
  const shared = JSON.parse(document.getElementById("shared-conversation").textContent);
  const box = document.getElementById("shared-messages");
  for (const message of shared.messages) {
    if (message.role === "user") {
      const turn = userTurn(message.content);
      turn.title = when(message.created_at);
      box.append(turn);
    } else {
      box.append(reply(message));
    }
  }
  document.body.dataset.ready = "true";
}

draw();
