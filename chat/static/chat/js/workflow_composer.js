// The admin's workflow composer: the draft's step graph as nested cards, edited in place.
//
// The JSON text box stays the one source of truth: every change here is written back into it,
// and a valid edit typed there redraws the cards. The server validates what is posted (the
// cards only offer the building blocks the page lists), so a page without this script, or a
// graph the cards cannot show, is still edited as JSON. No inline script or style: CSP allows
// neither (element.style set from here is the CSSOM, which it does allow).
(function () {
  "use strict";

  var TYPES = ["Step", "Steps", "Parallel", "Loop", "Condition", "Router"];
  var INNER = { Steps: [["steps", "steps"]], Parallel: [["steps", "branches (run at once)"]], Loop: [["steps", "steps (each iteration)"]],
    Condition: [["steps", "if true"], ["else_steps", "else"]], Router: [["choices", "choices (the selector names one)"]] };
  var REVIEWED = ["Step", "Steps", "Loop", "Condition", "Router"];

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function blocks(textarea, name) {
    try { return JSON.parse(textarea.getAttribute("data-" + name) || "[]"); } catch (e) { return []; }
  }

  // The server's problems with the saved graph ("steps[1].executor_ref: No function …", Django's
  // error list above the field), each with the path of the step it is about: the composer marks
  // that step, and only that one. Any edit clears them (saving checks the graph again).
  var STEP_PATH = /^(steps(?:\[\d+\](?:\.(?:steps|else_steps|choices)\[\d+\])*))(?:\.\S*)?: ([\s\S]*)$/;
  var INNER_STEP = /^\.(?:steps|else_steps|choices)\[\d+\]/;

  function problems(textarea) {
    var row = textarea.closest(".form-row");
    if (!row) return [];
    return Array.prototype.map.call(row.querySelectorAll(".errorlist li"), function (item) {
      var found = STEP_PATH.exec(item.textContent.trim());
      return found ? { path: found[1], text: found[0] } : null;
    }).filter(Boolean);
  }

  function Composer(textarea) {
    this.textarea = textarea;
    this.agents = blocks(textarea, "agents");
    this.teams = blocks(textarea, "teams");
    this.functions = blocks(textarea, "functions");
    this.root = el("div", "workflow-composer");
    this.root.setAttribute("data-testid", "workflow-composer");
    textarea.parentNode.insertBefore(this.root, textarea);
    this.problems = problems(textarea);
    var self = this;
    textarea.addEventListener("input", function () { self.problems = []; self.load(); });
    this.load();
  }

  Composer.prototype.load = function () {
    var text = this.textarea.value.trim();
    var steps;
    try { steps = text ? JSON.parse(text) : []; } catch (e) { steps = undefined; }
    if (steps === null) steps = [];  // a form not filled in yet
    if (!Array.isArray(steps)) {
      this.root.replaceChildren(el("p", "wc-note", "The JSON below is not a list of steps yet: fix it there, and the composer comes back."));
      return;
    }
    this.steps = steps;
    this.draw();
  };

  Composer.prototype.save = function (redraw) {
    if (this.problems.length) { this.problems = []; redraw = true; }
    this.textarea.value = JSON.stringify(this.steps, null, 2);
    if (redraw) this.draw();
  };

  Composer.prototype.draw = function () {
    var heading = el("p", "wc-note", "Compose the steps here, or edit the JSON below: each keeps the other up to date. Saving the page checks the graph.");
    this.root.replaceChildren(heading, this.list(this.steps, "steps", false, "steps"));
  };

  Composer.prototype.usedNames = function () {
    var names = {};
    (function walk(list) {
      (list || []).forEach(function (step) {
        if (step && typeof step === "object") {
          if (step.name) names[step.name] = true;
          walk(step.steps); walk(step.else_steps); walk(step.choices);
        }
      });
    })(this.steps);
    return names;
  };

  Composer.prototype.fresh = function (type) {
    var names = this.usedNames(), base = type.toLowerCase(), n = 1;
    while (names[base + "-" + n]) n += 1;
    var step = { type: type, name: base + "-" + n };
    if (type === "Step") {
      if (this.functions.length) step.executor_ref = this.functions[0][0];
      else if (this.agents.length) step.agent_id = this.agents[0];
    } else if (type === "Loop") {
      step.max_iterations = 3; step.steps = [];
    } else if (type === "Condition") {
      step.evaluator = true; step.steps = []; step.else_steps = [];
    } else if (type === "Router") {
      step.selector = this.functions.length ? this.functions[0][0] : ""; step.choices = [];
    } else {
      step.steps = [];
    }
    return step;
  };

  // The problems about the step at ``path`` itself (not about a step nested in it).
  Composer.prototype.problemsAt = function (path) {
    return this.problems.filter(function (problem) {
      if (problem.path.indexOf(path) !== 0) return false;
      var rest = problem.path.slice(path.length);
      return rest === "" || (rest.charAt(0) === "." && !INNER_STEP.test(rest));
    });
  };

  Composer.prototype.mark = function (card, path) {
    var found = this.problemsAt(path);
    if (!found.length) return;
    card.classList.add("wc-invalid");
    found.forEach(function (problem) { card.appendChild(el("p", "wc-problem", problem.text)); });
  };

  Composer.prototype.list = function (list, label, nested, prefix) {
    var self = this;
    var box = el("ol", "wc-list");
    box.setAttribute("data-list", label);
    list.forEach(function (step, position) { box.appendChild(self.card(list, position, nested, prefix + "[" + position + "]")); });
    var adder = el("li", "wc-add");
    var type = el("select", "wc-add-type");
    type.setAttribute("aria-label", "type of the step to add to " + label);
    TYPES.forEach(function (name) { type.appendChild(new Option(name, name)); });
    var add = el("button", "button wc-add-button", "Add step");
    add.type = "button";
    add.addEventListener("click", function () { list.push(self.fresh(type.value)); self.save(true); });
    adder.append(type, add);
    box.appendChild(adder);
    return box;
  };

  Composer.prototype.card = function (list, position, nested, path) {
    var self = this, step = list[position];
    var card = el("li", "wc-step");
    if (!step || typeof step !== "object" || TYPES.indexOf(step.type) < 0) {
      card.appendChild(el("span", "wc-note", "This entry is not a step the composer knows; edit it in the JSON below."));
      this.mark(card, path);
      return card;
    }
    card.classList.add("wc-" + step.type.toLowerCase());
    var head = el("div", "wc-head");
    head.appendChild(el("strong", "wc-type", step.type));
    var name = this.input("name", step.name || "", function (value) { if (value) step.name = value; else delete step.name; });
    name.classList.add("wc-name");
    head.appendChild(name);
    [["↑", "move up", -1], ["↓", "move down", 1]].forEach(function (move) {
      var button = el("button", "button wc-move", move[0]);
      button.type = "button"; button.title = move[1]; button.setAttribute("aria-label", move[1]);
      var to = position + move[2];
      button.disabled = to < 0 || to >= list.length;
      button.addEventListener("click", function () { list.splice(to, 0, list.splice(position, 1)[0]); self.save(true); });
      head.appendChild(button);
    });
    var remove = el("button", "button wc-remove", "Remove");
    remove.type = "button";
    remove.addEventListener("click", function () { list.splice(position, 1); self.save(true); });
    head.appendChild(remove);
    card.appendChild(head);
    this.mark(card, path);

    var body = el("div", "wc-body");
    if (step.type === "Step") body.appendChild(this.executor(step));
    if (step.type === "Loop") {
      body.appendChild(this.labelled("max iterations", this.number(step, "max_iterations", 3)));
      body.appendChild(this.labelled("end condition", this.functionSelect(step, "end_condition", [["", "none: run max iterations"]])));
    }
    if (step.type === "Condition") {
      body.appendChild(this.labelled("evaluator", this.functionSelect(step, "evaluator", [["true", "always (true)"], ["false", "never (false)"]])));
    }
    if (step.type === "Router") body.appendChild(this.labelled("selector", this.functionSelect(step, "selector", [])));
    if (REVIEWED.indexOf(step.type) >= 0) body.appendChild(this.review(step));
    (INNER[step.type] || []).forEach(function (inner) {
      if (!Array.isArray(step[inner[0]])) step[inner[0]] = [];
      var group = el("div", "wc-inner");
      group.appendChild(el("span", "wc-inner-label", inner[1]));
      group.appendChild(self.list(step[inner[0]], inner[0], true, path + "." + inner[0]));
      body.appendChild(group);
    });
    card.appendChild(body);
    return card;
  };

  Composer.prototype.input = function (label, value, set) {
    var self = this, input = el("input", "vTextField");
    input.type = "text"; input.value = value; input.setAttribute("aria-label", label); input.placeholder = label;
    input.addEventListener("input", function () { set(input.value); self.save(false); });
    return input;
  };

  Composer.prototype.labelled = function (text, control) {
    var label = el("label", "wc-field");
    label.append(el("span", "wc-label", text), control);
    return label;
  };

  Composer.prototype.number = function (step, key, fallback) {
    var self = this, input = el("input", "vIntegerField");
    input.type = "number"; input.min = "1"; input.value = step[key] === undefined ? fallback : step[key];
    input.addEventListener("input", function () { var n = parseInt(input.value, 10); step[key] = isNaN(n) ? input.value : n; self.save(false); });
    return input;
  };

  Composer.prototype.options = function (select, pairs, current) {
    var known = false;
    pairs.forEach(function (pair) {
      select.appendChild(new Option(pair[1], pair[0], false, pair[0] === current));
      if (pair[0] === current) known = true;
    });
    if (!known && current !== "") select.appendChild(new Option(current + " (unknown: not offered)", current, false, true));
  };

  Composer.prototype.functionSelect = function (step, key, extra) {
    var self = this, select = el("select", "wc-function");
    select.setAttribute("aria-label", key);
    var current = step[key] === undefined || step[key] === null ? "" : String(step[key]);
    if (key === "evaluator" && step[key] === undefined) current = "true";
    var pairs = extra.concat(this.functions.map(function (fn) { return [fn[0], fn[0] + (fn[1] ? " (" + fn[1] + ")" : "")]; }));
    this.options(select, pairs, current);
    select.addEventListener("change", function () {
      var value = select.value;
      if (key === "evaluator" && (value === "true" || value === "false")) step[key] = value === "true";
      else if (value === "") delete step[key];
      else step[key] = value;
      delete step[key + "_type"];
      self.save(false);
    });
    return select;
  };

  Composer.prototype.executor = function (step) {
    var self = this, row = el("div", "wc-executor");
    var kinds = [["agent_id", "agent"], ["team_id", "team"], ["executor_ref", "function"]];
    var kind = kinds.filter(function (k) { return step[k[0]]; }).map(function (k) { return k[0]; })[0] || "executor_ref";
    var kindSelect = el("select", "wc-executor-kind");
    kindSelect.setAttribute("aria-label", "executor kind");
    this.options(kindSelect, kinds, kind);
    var idSelect = el("select", "wc-executor-id");
    idSelect.setAttribute("aria-label", "executor");
    var ids = function (which) {
      if (which === "agent_id") return self.agents.map(function (id) { return [id, id]; });
      if (which === "team_id") return self.teams.map(function (id) { return [id, id]; });
      return self.functions.map(function (fn) { return [fn[0], fn[0] + (fn[1] ? " (" + fn[1] + ")" : "")]; });
    };
    this.options(idSelect, ids(kind), step[kind] || "");
    kindSelect.addEventListener("change", function () {
      kinds.forEach(function (k) { delete step[k[0]]; });
      var first = ids(kindSelect.value)[0];
      step[kindSelect.value] = first ? first[0] : "";
      self.save(true);
    });
    idSelect.addEventListener("change", function () { step[kindSelect.value] = idSelect.value; self.save(false); });
    row.append(this.labelled("runs", kindSelect), idSelect);
    return row;
  };

  Composer.prototype.review = function (step) {
    var self = this, box = el("div", "wc-review");
    var review = step.human_review && typeof step.human_review === "object" ? step.human_review : {};
    var check = el("input");
    check.type = "checkbox"; check.checked = review.requires_confirmation === true;
    var message = this.input("confirmation message", review.confirmation_message || "", function (value) {
      var r = step.human_review || (step.human_review = {});
      if (value) r.confirmation_message = value; else delete r.confirmation_message;
    });
    message.hidden = !check.checked;
    check.addEventListener("change", function () {
      var r = step.human_review || (step.human_review = {});
      if (check.checked) r.requires_confirmation = true; else { delete r.requires_confirmation; delete r.confirmation_message; }
      if (!Object.keys(r).length) delete step.human_review;
      message.hidden = !check.checked;
      self.save(false);
    });
    var label = el("label", "wc-field");
    label.append(check, el("span", "wc-label", " a person confirms before it runs"));
    box.append(label, message);
    var others = Object.keys(review).filter(function (k) { return k !== "requires_confirmation" && k !== "confirmation_message"; });
    if (others.length) box.appendChild(el("span", "wc-note", "also in its review (edit in the JSON): " + others.join(", ")));
    return box;
  };

  function start() {
    document.querySelectorAll("textarea.workflow-steps-json").forEach(function (textarea) {
      if (!textarea.name || textarea.name.indexOf("__prefix__") >= 0 || textarea.composer) return;
      textarea.composer = new Composer(textarea);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
