// A workflow's reply: its steps as a timeline under the user's message (one row per step, Parallel
// branches side by side, loop iterations counted, agent and team steps opening on their own text),
// filled live from the workflow's events and rebuilt from the stored run's events on reload. A
// paused review is answered in place: the answered step_requirements continue the same run.
import { el, needsDecision, pretty, renderMarkdown } from "./render.js";

const CONTAINERS = new Set(["Steps", "Parallel", "Loop", "Condition", "Router"]);
const LABELS = { waiting: "waiting", running: "running…", done: "done", skipped: "skipped", failed: "failed", paused: "waiting for your review", cancelled: "stopped" };
// The container events: the container row's own start and end.
const CONTAINER_STARTED = ["ParallelExecutionStarted", "LoopExecutionStarted", "ConditionExecutionStarted", "RouterExecutionStarted", "StepsExecutionStarted"];
const CONTAINER_COMPLETED = ["ParallelExecutionCompleted", "LoopExecutionCompleted", "ConditionExecutionCompleted", "RouterExecutionCompleted", "StepsExecutionCompleted"];

function executorOf(step) {
  if (step.agent) return step.agent.name || step.agent.id;
  if (step.team) return step.team.name || step.team.id;
  return typeof step.executor === "string" ? step.executor : "";
}

export function formatDuration(seconds) {
  if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds < 0) return "";
  if (seconds < 1) return "<1 s";
  return seconds < 10 ? `${seconds.toFixed(1)} s` : `${Math.round(seconds)} s`;
}

let rowIds = 0;

/** One step of the timeline. A container's children are rows of their own; a leaf opens on its output. */
class StepRow {
  constructor({ name, type = "Step", executor = "" }) {
    this.name = name;
    this.type = type;
    this.container = CONTAINERS.has(type);
    this.text = "";
    this.streamed = false;
    this.startedAt = null;
    this.state = el("span", { class: "wf-state" });
    this.time = el("span", { class: "wf-time" });
    this.iteration = el("span", { class: "wf-iteration" });
    const head = [el("span", { class: "wf-name", text: name }), " ", el("span", { class: "wf-type", text: executor ? `${type} · ${executor}` : type }), " ", this.iteration, " ", this.state, " ", this.time];
    this.el = el("li", { class: `wf-step${this.container ? " wf-container" : ""}`, "data-type": type, "data-name": name });
    if (this.container) {
      this.children = el("ol", { class: type === "Parallel" ? "wf-children wf-branches" : "wf-children", "aria-label": `${name}: ${type === "Parallel" ? "branches" : "steps"}` });
      this.el.append(el("div", { class: "wf-head" }, ...head), this.children);
    } else {
      const id = `wf-body-${++rowIds}`;
      this.body = el("div", { class: "wf-body md", id, hidden: true });
      this.toggle = el("button", { type: "button", class: "wf-toggle", "aria-expanded": "false", "aria-controls": id },
        el("span", { class: "step-chevron", "aria-hidden": "true" }), ...head);
      this.toggle.addEventListener("click", () => {
        this.touched = true;
        this.expand(this.toggle.getAttribute("aria-expanded") !== "true");
      });
      this.el.append(this.toggle, this.body);
    }
    this.touched = false;
    this.setState("waiting");
  }

  expand(open) {
    if (!this.toggle) return;
    this.toggle.setAttribute("aria-expanded", open ? "true" : "false");
    this.body.hidden = !open;
  }

  setState(state) {
    this.el.dataset.state = state;
    this.state.textContent = LABELS[state] || state;
    // Open while it works (its text streams in), folded once it has ended unless the person chose.
    if (!this.touched) this.expand(state === "running" && this.streamed);
  }

  started(at) {
    this.startedAt = at ?? Date.now() / 1000;
    this.ran = false;
    this.time.textContent = "";
    this.setState("running");
  }

  finished(state, { at, duration } = {}) {
    const seconds = typeof duration === "number" ? duration : this.startedAt != null && at != null ? at - this.startedAt : null;
    this.time.textContent = formatDuration(seconds);
    this.setState(state);
  }

  appendText(delta) {
    if (!delta || !this.body) return;
    this.text += delta;
    this.streamed = true;
    if (!this.touched && this.el.dataset.state === "running") this.expand(true);
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      renderMarkdown(this.body, this.text);
    });
  }

  /** The step's whole output, unless its tokens were streamed already. */
  setOutput(content) {
    if (!this.body || this.streamed || content === null || content === undefined || content === "") return;
    this.text = typeof content === "string" ? content : JSON.stringify(content, null, 2);
    renderMarkdown(this.body, this.text);
  }
}

/**
 * The timeline of one workflow run, laid out from the workflow's definition (every step waiting)
 * and moved on by its events. ``apply`` reads one frame and returns the run's end when it ended:
 * "RunCompleted", "RunPaused", "RunCancelled", "RunError" (the agent names the chat already reads).
 */
export class WorkflowTimeline {
  constructor(definition) {
    this.rows = []; // every row, in the order they were laid out
    this.byId = new Map(); // step_id -> row, once an event named it
    this.list = el("ol", { class: "wf-timeline", "aria-label": `${definition?.name || "Workflow"} steps` });
    this.el = el("section", { class: "wf-run" }, this.list);
    this.lay(definition?.steps || [], this.list, null);
  }

  lay(steps, list, parent) {
    for (const step of steps) {
      const row = this.add(list, { name: step.name, type: step.type, executor: executorOf(step) }, parent);
      if (row.container) this.lay(step.steps || step.choices || [], row.children, row);
    }
  }

  add(list, info, parent) {
    const row = new StepRow(info);
    row.parent = parent;
    this.rows.push(row);
    list.append(row.el);
    return row;
  }

  /** The row an event is about: by its step_id once seen, else the first unbound row of that name under its parent. */
  row(data, type = "Step") {
    if (data.step_id && this.byId.has(data.step_id)) return this.byId.get(data.step_id);
    const parent = data.parent_step_id ? this.byId.get(data.parent_step_id) : null;
    let row = this.rows.find((one) => one.name === data.step_name && !one.bound && (!parent || one.parent === parent));
    if (!row) row = this.add(parent ? parent.children : this.list, { name: data.step_name || "step", type }, parent);
    row.bound = true;
    if (data.step_id) this.byId.set(data.step_id, row);
    return row;
  }

  /** A child run's event (an agent or team step's own stream): its text goes to its step's row. */
  applyChild(name, data) {
    if (!data.step_name && !data.step_id) return;
    const row = this.row(data);
    const event = data.team_id && name.startsWith("Team") ? name.slice(4) : name;
    if (event === "RunContent" && typeof data.content === "string") row.appendText(data.content);
    else if (event === "RunCompleted") row.setOutput(data.content);
    else if (event === "RunPaused") row.setState("paused");
  }

  apply({ event: name, data }, workflowRunId) {
    if (data.parent_run_id && data.run_id !== workflowRunId) {
      this.applyChild(name, data);
      return null;
    }
    const at = typeof data.created_at === "number" ? data.created_at : null;
    if (CONTAINER_STARTED.includes(name)) {
      this.row(data, name.replace(/ExecutionStarted$/, "")).started(at);
    } else if (CONTAINER_COMPLETED.includes(name)) {
      const row = this.row(data, name.replace(/ExecutionCompleted$/, ""));
      row.finished("done", { at });
      // What a condition or router did not choose never ran.
      this.settle((one) => one.el.dataset.state === "waiting" && this.within(one, row), "skipped");
    } else if (name === "LoopIterationStarted") {
      const row = this.row(data, "Loop");
      row.iteration.textContent = data.max_iterations ? `iteration ${data.iteration} of ${data.max_iterations}` : `iteration ${data.iteration}`;
      for (const one of this.rows) if (this.within(one, row)) one.setState("waiting");
    } else if (name === "StepStarted") {
      this.row(data).started(at);
    } else if (name === "StepCompleted") {
      const row = this.row(data);
      const response = data.step_response || {};
      row.setOutput(data.content ?? response.content);
      row.ran = true;
      row.finished(response.success === false || response.error ? "failed" : "done", { at, duration: response.metrics?.duration });
    } else if (name === "StepError") {
      const row = this.row(data);
      row.setOutput(data.error || data.content);
      row.finished("failed", { at });
    } else if (name === "StepPaused" || name === "RouterPaused" || name === "StepExecutorPaused") {
      this.row(data, name === "RouterPaused" ? "Router" : "Step").setState("paused");
    } else if (name === "StepContinued") {
      // An output review comes after the step ran: answered, the step is done (a retry starts it again).
      const row = this.row(data);
      row.setState(row.ran ? "done" : "running");
    } else if (name === "WorkflowPaused") {
      // The run keeps every review it asked for: the ones answered before are done with.
      for (const requirement of [...(data.step_requirements || []), ...(data.error_requirements || [])].filter(waitsForReview)) this.row(requirement, requirement.step_type).setState("paused");
      return "RunPaused";
    } else if (name === "WorkflowCompleted") {
      this.end("skipped");
      return "RunCompleted";
    } else if (name === "WorkflowCancelled") {
      this.end("cancelled");
      return "RunCancelled";
    } else if (name === "WorkflowError") {
      this.end("failed");
      return "RunError";
    }
    return null;
  }

  within(row, container) {
    for (let up = row.parent; up; up = up.parent) if (up === container) return true;
    return false;
  }

  settle(test, state) {
    for (const row of this.rows) if (test(row)) row.finished(state);
  }

  /** The run ended: a step still running or paused ended with it; one still waiting never ran. */
  end(unfinished) {
    this.settle((row) => ["running", "paused"].includes(row.el.dataset.state), unfinished);
    this.settle((row) => row.el.dataset.state === "waiting", "skipped");
  }

  /** A stored run without its events: the steps it recorded, done or failed. */
  fromResults(results) {
    for (const result of results || []) {
      const row = this.row(result, result.step_type);
      if (!row.container) row.setOutput(result.content);
      row.finished(result.success === false ? "failed" : "done", { duration: result.metrics?.duration });
      this.fromResults(result.steps);
    }
  }
}

// ---- the review a paused workflow waits for ----------------------------------------------------

/** Whether a stored requirement still waits for a person. */
export function waitsForReview(requirement) {
  if (isErrorRequirement(requirement)) return requirement.decision === null || requirement.decision === undefined;
  if (requirement.requires_executor_input) return pendingTools(requirement).length > 0;
  if (requirement.requires_route_selection) return !requirement.selected_choices;
  if (requirement.requires_user_input) return !requirement.user_input;
  if (requirement.requires_confirmation || requirement.requires_output_review) return requirement.confirmed === null || requirement.confirmed === undefined;
  return false;
}

let fieldIds = 0;

/** A labelled input for one field: a checkbox (bool), a list (allowed values or an enum), a number, or text. */
export function fieldInput({ name, type, choices, description, required = true, value }) {
  const id = `wf-field-${++fieldIds}`;
  let input;
  if (type === "bool" || type === "boolean") {
    input = el("input", { id, name, type: "checkbox" });
    input.checked = value === true;
    return el("div", { class: "field field-check" }, input, el("label", { for: id, text: name.replace(/_/g, " ") }), description ? el("small", { text: description }) : null);
  }
  if (choices) {
    input = el("select", { id, name }, ...choices.map((choice) => el("option", { value: JSON.stringify(choice), text: String(choice) })));
  } else {
    const numeric = ["int", "integer", "float", "number"].includes(type);
    input = el("input", { id, name, type: numeric ? "number" : "text", step: ["float", "number"].includes(type) ? "any" : undefined, required: required || undefined });
  }
  if (value !== undefined && value !== null) input.value = choices ? JSON.stringify(value) : String(value);
  return el("div", { class: "field" }, el("label", { for: id, text: name.replace(/_/g, " ") }), input, description ? el("small", { text: description }) : null);
}

/** The value a field's input holds, typed as its field asks; undefined when left empty. */
export function fieldValue(input) {
  if (input.type === "checkbox") return input.checked;
  if (input.tagName === "SELECT") return JSON.parse(input.value);
  const raw = input.value.trim();
  if (raw === "") return undefined;
  return input.type === "number" ? Number(raw) : raw;
}

/** A failed step that waits for "retry" or "skip" (Agno's ErrorRequirement, ``on_error="pause"``). */
const isErrorRequirement = (requirement) => "error_message" in requirement && "decision" in requirement;

/** The tool calls an agent or team step waits on (its run's open requirements). */
function pendingTools(requirement) {
  return (requirement.executor_requirements || []).map((one) => one.tool_execution).filter((tool) => tool && needsDecision(tool));
}

/** An agent or team step paused on its tools: Approve or Reject each call, then the step goes on. */
function executorReview(requirement, item, decide, button) {
  const answers = new Map();
  const asker = requirement.executor_name || requirement.step_name;
  const tools = pendingTools(requirement);
  const finish = () => {
    if (answers.size < tools.length) return;
    const executor = (requirement.executor_requirements || []).map((one) =>
      answers.has(one.tool_execution) ? { ...one, tool_execution: answers.get(one.tool_execution) } : one);
    const rejected = [...answers.values()].some((tool) => tool.confirmed === false);
    decide({ ...requirement, executor_requirements: executor }, rejected ? "rejected" : "confirmed");
  };
  const items = [];
  for (const tool of tools) {
    item.append(el("p", { class: "approval-title" }, `${asker} wants to run `, el("code", { text: tool.tool_name }), " and needs your approval."),
      el("pre", { class: "tool-args", "aria-label": "Arguments" }, pretty(tool.tool_args || {})));
    const choose = (confirmed) => {
      answers.set(tool, { ...tool, confirmed });
      finish();
    };
    items.push(button("Approve", () => choose(true), true), button("Reject", () => choose(false)));
  }
  return items;
}

function reviewTitle(requirement) {
  const step = `“${requirement.step_name}”`;
  if (isErrorRequirement(requirement)) return `Step “${requirement.step_name}” failed: ${requirement.error_message}`;
  if (requirement.requires_route_selection) return requirement.user_input_message || `Choose where ${step} goes next.`;
  if (requirement.requires_user_input) return requirement.user_input_message || `Step ${step} needs a few details.`;
  if (requirement.requires_output_review) return requirement.output_review_message || `Review the output of ${step}.`;
  return requirement.confirmation_message || `Run step ${step}?`;
}

/** One requirement's form; ``decide`` gets the answered requirement. */
function reviewItem(requirement, decide, disabled) {
  const item = el("form", { class: "approval-item wf-review", novalidate: true, "data-step": requirement.step_name });
  if (!requirement.requires_executor_input) item.append(el("p", { class: "approval-title", text: reviewTitle(requirement) }));
  const actions = el("div", { class: "approval-actions" });
  const button = (label, onclick, primary = false, type = "button") =>
    el("button", { type, class: `btn ${primary ? "btn-primary" : "btn-secondary"}`, disabled, onclick }, label);
  if (isErrorRequirement(requirement)) {
    actions.append(
      button("Retry", () => decide({ ...requirement, decision: "retry" }, "retried"), true),
      button("Skip", () => decide({ ...requirement, decision: "skip" }, "skipped")));
  } else if (requirement.requires_executor_input) {
    actions.append(...executorReview(requirement, item, decide, button));
  } else if (requirement.requires_route_selection) {
    const multiple = requirement.allow_multiple_selections;
    const group = `wf-route-${++fieldIds}`;
    const boxes = (requirement.available_choices || []).map((choice) => {
      const id = `wf-field-${++fieldIds}`;
      const box = el("input", { id, type: multiple ? "checkbox" : "radio", name: group, value: choice, disabled });
      item.append(el("div", { class: "field field-check" }, box, el("label", { for: id, text: choice })));
      return box;
    });
    if (boxes[0] && !multiple) boxes[0].checked = true;
    actions.append(button("Continue", null, true, "submit"));
    item.addEventListener("submit", (event) => {
      event.preventDefault();
      const chosen = boxes.filter((box) => box.checked).map((box) => box.value);
      if (chosen.length) decide({ ...requirement, selected_choices: chosen }, `chose ${chosen.join(", ")}`);
    });
  } else if (requirement.requires_user_input) {
    const fields = requirement.user_input_schema || [];
    const inputs = fields.map((field) => {
      const row = fieldInput({ name: field.name, type: field.field_type, choices: field.allowed_values, description: field.description, required: field.required !== false });
      item.append(row);
      return { field, input: row.querySelector("input, select") };
    });
    if (!fields.length) {
      const row = fieldInput({ name: "input", type: "str" });
      item.append(row);
      inputs.push({ field: { name: "input" }, input: row.querySelector("input") });
    }
    actions.append(button("Submit", null, true, "submit"));
    item.addEventListener("submit", (event) => {
      event.preventDefault();
      const values = {};
      for (const { field, input } of inputs) {
        const value = fieldValue(input);
        if (value === undefined && field.required !== false) {
          input.setAttribute("aria-invalid", "true");
          input.focus();
          return;
        }
        if (value !== undefined) values[field.name] = value;
      }
      decide({ ...requirement, user_input: values }, "answered");
    });
  } else if (requirement.requires_output_review) {
    const output = requirement.step_output?.content;
    const shown = el("div", { class: "md wf-output", "aria-label": "The step's output" });
    renderMarkdown(shown, typeof output === "string" ? output : JSON.stringify(output ?? "", null, 2));
    item.append(shown);
    const area = el("textarea", { rows: 4, class: "wf-review-text", hidden: true, "aria-label": "Edited output" });
    const feedback = el("textarea", { rows: 2, class: "wf-review-text", hidden: true, "aria-label": "What to change" });
    item.append(area, feedback);
    const accept = button("Accept", () => decide({ ...requirement, confirmed: true }, "accepted"), true);
    const edit = button("Edit", () => {
      if (area.hidden) {
        area.hidden = false;
        feedback.hidden = true;
        area.value = typeof output === "string" ? output : JSON.stringify(output ?? "");
        edit.textContent = "Save edit";
        area.focus();
        return;
      }
      decide({ ...requirement, confirmed: true, edited_output: area.value }, "edited");
    });
    const reject = button("Reject", () => {
      if (feedback.hidden) {
        feedback.hidden = false;
        area.hidden = true;
        reject.textContent = "Send feedback";
        feedback.focus();
        return;
      }
      decide({ ...requirement, confirmed: false, rejection_feedback: feedback.value.trim() || null }, "rejected");
    });
    actions.append(accept, edit, reject);
  } else {
    actions.append(
      button("Confirm", () => decide({ ...requirement, confirmed: true }, "confirmed"), true),
      button("Reject", () => decide({ ...requirement, confirmed: false }, "rejected")));
  }
  item.append(actions);
  return item;
}

/**
 * The review panel of a paused workflow run: one form per waiting requirement. Once each is
 * answered, ``onDecided(requirements, panel, verbs)`` gets those requirements, answered.
 */
export function reviewPanel(requirements, { disabled = false, onDecided }) {
  const waiting = (requirements || []).filter(waitsForReview);
  if (!waiting.length) return null;
  const answers = new Map();
  const panel = el("div", { class: "approval wf-approval", role: "group", "aria-label": "Review needed" });
  const finish = () => {
    if (answers.size < waiting.length) return;
    panel.querySelectorAll("button, input, textarea, select").forEach((node) => (node.disabled = true));
    // Only what this pause asks: the server refuses a requirement it already had answered.
    const answered = waiting.map((one) => answers.get(one).answer);
    onDecided(answered, panel, [...answers.values()].map(({ verb }) => verb));
  };
  for (const requirement of waiting) {
    const item = reviewItem(requirement, (answer, verb) => {
      answers.set(requirement, { answer, verb });
      item.classList.add("is-decided");
      finish();
    }, disabled);
    panel.append(item);
  }
  return panel;
}

/** What was decided on a review the run no longer waits for, for the stored run's reply. */
export function reviewRecord(requirement, { by } = {}) {
  if (waitsForReview(requirement)) return null;
  const step = requirement.step_name;
  let verb;
  if (isErrorRequirement(requirement)) verb = requirement.decision === "retry" ? "retried" : "skipped";
  else if (requirement.requires_route_selection && requirement.selected_choices) verb = `chose ${requirement.selected_choices.join(", ")} for`;
  else if (requirement.requires_user_input && requirement.user_input) verb = "answered";
  else if (requirement.confirmed === true) verb = requirement.edited_output != null ? "edited the output of" : requirement.requires_output_review ? "accepted the output of" : "confirmed";
  else if (requirement.confirmed === false) verb = requirement.requires_output_review ? "rejected the output of" : "rejected";
  if (!verb) return null;
  const feedback = requirement.rejection_feedback ? ` “${requirement.rejection_feedback}”` : "";
  return el("p", { class: "approval-outcome approval-record", "data-decision": verb.split(" ")[0] },
    `${by ? `You (${by})` : "You"} ${verb} `, el("code", { text: step }), `${feedback}.`);
}

// ---- the workflow's input ----------------------------------------------------------------------

/** The fields of a workflow's input_schema (a JSON schema object): [{name, type, choices, ...}]. */
export function schemaFields(schema) {
  const properties = schema?.properties || {};
  const required = new Set(schema?.required || []);
  return Object.entries(properties).map(([name, spec]) => ({
    name,
    type: spec.type === "integer" || spec.type === "number" ? spec.type : spec.type === "boolean" ? "boolean" : "str",
    choices: Array.isArray(spec.enum) ? spec.enum : null,
    description: spec.description || spec.title || "",
    required: required.has(name),
    value: spec.default,
  }));
}
