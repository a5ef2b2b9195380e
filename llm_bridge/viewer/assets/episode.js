// One episode of an alemlite LLM run, step by step. Reads the JSON block #episode-data
// (built by llm_bridge/viewer/page.py): strings are stored once in data.strings and
// referred to by number everywhere else. Text from a transcript is only ever set as
// textContent, never parsed as HTML.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("episode-data").textContent);
  const strings = data.strings;
  const last = data.steps.length; // positions 0..last; the last one is the final state
  const app = document.getElementById("app");

  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === false || value === null || value === undefined) continue;
      node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function text(index) {
    return index === null || index === undefined ? "" : strings[index];
  }

  function format(value) {
    if (typeof value !== "number") return String(value);
    return Number.isInteger(value) || Math.abs(value) >= 1000 ? value.toFixed(0) : value.toPrecision(3);
  }

  // ---- the fixed part of the page -------------------------------------------------------
  const counts = data.counts;
  const score = (name) => `${name} ${format(data.metrics[name])}`;
  const headline = data.headline.filter((name) => name in data.metrics);
  const others = Object.keys(data.metrics).filter((name) => !headline.includes(name));
  app.append(
    el("header", {},
      el("a", { href: "index.html", id: "to-index" }, "\u2190 all episodes"),
      el("h1", {}, `${data.env} \u00b7 episode ${data.episode} (seed ${data.seed})`),
      el("p", { class: "setting" }, data.setting),
      el("p", { class: "scores" },
        `${last} steps${data.finished ? "" : " (unfinished)"} \u00b7 ${counts.turns} LLM turns: ` +
        `${counts.parse_failures} without an action, ${counts.cut_off} cut off, ` +
        `${counts.errors} failed requests`),
      el("p", { class: "scores", id: "scores" }, headline.map(score).join(" \u00b7 ")),
      others.length ? el("details", { class: "metrics" }, el("summary", {}, "all metrics"),
        el("p", { class: "scores" }, others.map(score).join(" \u00b7 "))) : null,
      el("details", { class: "system" }, el("summary", {}, "system prompt"),
        el("pre", {}, text(data.system_prompt))),
      data.free_system_prompt === null ? null : el("details", { class: "system", id: "free-system" },
        el("summary", {}, "system prompt after a step down to free text (turns marked \"free prompt\")"),
        el("pre", {}, text(data.free_system_prompt)))));

  const slider = el("input", { type: "range", id: "slider", min: 0, max: last, value: 0,
    "aria-label": "step" });
  const label = el("span", { id: "step-label" });
  const previous = el("button", { id: "prev", title: "previous step (\u2190)" }, "\u25c0 prev");
  const next = el("button", { id: "next", title: "next step (\u2192)" }, "next \u25b6");
  app.append(el("nav", { class: "controls" }, previous, slider, next, label));

  // A strip of steps: red where a reply failed to parse, amber where one was cut off.
  const strip = el("div", { class: "timeline", id: "timeline" });
  for (let t = 0; t <= last; t++) {
    const turns = t < last ? data.steps[t].turns.filter((turn) => turn) : [];
    const cell = el("span", {
      class: "cell" + (turns.some((turn) => turn.failed) ? " fail" : "") +
        (turns.some((turn) => turn.cut_off) ? " cut" : "") +
        (turns.some((turn) => turn.error) ? " error" : ""),
      title: t < last ? `step ${t}` : "end",
      "data-step": t,
    });
    cell.addEventListener("click", () => show(t));
    strip.append(cell);
  }
  app.append(strip);

  // Who is who in the picture: each seat's colour, where the environment tells them.
  const swatch = (seat) => el("span", { class: "swatch", style: `background: ${data.seats[seat].colour}` });
  const coloured = data.seats.every((info) => info.colour);
  const legend = coloured && data.frame_kind === "image"
    ? el("ul", { class: "legend", id: "legend" }, ...data.seats.map((info, seat) =>
      el("li", { "data-seat": seat }, swatch(seat), `seat ${seat} \u00b7 ${info.name}`)))
    : null;
  const frame = el("div", { id: "frame" });
  const agents = el("div", { class: "agents", id: "agents" });
  app.append(el("main", {}, el("div", { class: "frame" }, frame, legend), agents));

  // ---- one position ---------------------------------------------------------------------
  function promptView(turn) {
    const body = el("div", { class: "messages" });
    for (const [role, content] of turn.prompt) {
      const box = el("div", { class: "message " + role }, el("h5", {}, role));
      const parts = typeof content === "number" ? [{ text: content }] : content;
      for (const part of parts) {
        if (part.image !== undefined) {
          box.append(el("img", { src: text(part.image), alt: "image sent to the model" }));
        } else {
          box.append(el("pre", {}, text(part.text)));
        }
      }
      body.append(box);
    }
    return el("details", { class: "prompt" },
      el("summary", {}, `prompt (${turn.prompt.length} messages after the system prompt)`), body);
  }

  function agentView(seat, t) {
    const info = data.seats[seat];
    const step = t < last ? data.steps[t] : null;
    const turn = step ? step.turns[seat] : null;
    const classes = ["agent", info.kind];
    if (turn && turn.failed) classes.push("failed");
    if (turn && turn.cut_off) classes.push("cut-off");
    if (turn && turn.error) classes.push("error");
    const box = el("section", { class: classes.join(" "), "data-seat": seat },
      el("h3", {}, coloured ? swatch(seat) : null, `seat ${seat} \u00b7 ${info.name} `,
        el("span", { class: "badge kind" }, info.kind === "llm" ? "LLM" : "policy (scripted or trained)")));
    if (!step) {
      box.append(el("p", { class: "muted" }, "episode over"));
      return box;
    }
    const action = data.action_names[step.actions[seat]] ?? String(step.actions[seat]);
    const line = el("p", { class: "action" }, "action ", el("b", { class: "action-name" }, action));
    if (turn) {
      line.append(" ", el("span", { class: "badge parse" + (turn.failed ? " bad" : "") },
        turn.failed ? "PARSE FAILED: no action in the reply, the no-op was played" : `parsed (${turn.parse})`));
      if (turn.cut_off) line.append(" ", el("span", { class: "badge bad cut" }, "CUT OFF at the token budget"));
      if (turn.error) line.append(" ", el("span", { class: "badge bad" }, "REQUEST FAILED"));
      if (turn.free_prompt) line.append(" ", el("span", { class: "badge free" }, "free prompt"));
    }
    line.append(" \u00b7 reward ", el("b", { class: "reward" }, format(step.rewards[seat])));
    box.append(line);
    if (!turn) {
      box.append(el("p", { class: "muted" },
        info.kind === "llm" ? "not asked this step" : "acts inside the compiled step (no prompt)"));
      return box;
    }
    if (turn.message) box.append(el("p", { class: "said" }, "message: ", el("q", {}, turn.message)));
    box.append(promptView(turn));
    if (turn.reasoning !== null) {
      box.append(el("div", { class: "reasoning" }, el("h4", {}, "reasoning"),
        el("pre", {}, text(turn.reasoning))));
    }
    box.append(el("div", { class: "reply" }, el("h4", {}, "reply"), el("pre", {}, text(turn.reply))));
    if (turn.error) box.append(el("p", { class: "bad" }, "error: " + turn.error));
    box.append(el("p", { class: "muted" },
      `${turn.model} \u00b7 tokens ${turn.tokens[0]} in / ${turn.tokens[1]} out \u00b7 ` +
      `${format(turn.latency_s)} s \u00b7 ${turn.attempts} attempt(s)`));
    return box;
  }

  let position = -1;
  function show(t) {
    t = Math.max(0, Math.min(last, Number(t) || 0));
    if (t === position) return;
    position = t;
    slider.value = String(t);
    label.textContent = t < last ? `step ${t} of ${last}` : `end (after ${last} steps)`;
    previous.disabled = t === 0;
    next.disabled = t === last;
    const shown = text(data.frames[t]);
    frame.replaceChildren(data.frame_kind === "image"
      ? el("img", { src: shown, alt: `the environment before step ${t}`, id: "frame-image", "data-step": t })
      : el("pre", { id: "frame-text", "data-step": t }, shown));
    agents.replaceChildren(...data.seats.map((_, seat) => agentView(seat, t)));
    for (const cell of strip.children) cell.classList.toggle("now", Number(cell.dataset.step) === t);
    try {
      history.replaceState(null, "", `#step=${t}`);
    } catch (error) {
      // Some browsers refuse to change a file:// URL; the page works without it.
    }
  }

  slider.addEventListener("input", () => show(slider.value));
  previous.addEventListener("click", () => show(position - 1));
  next.addEventListener("click", () => show(position + 1));
  document.addEventListener("keydown", (event) => {
    if (event.target instanceof HTMLInputElement && event.target !== slider) return;
    const moves = { ArrowLeft: -1, ArrowRight: 1, PageUp: -10, PageDown: 10 };
    if (event.key in moves) {
      show(position + moves[event.key]);
      event.preventDefault();
    } else if (event.key === "Home" || event.key === "End") {
      show(event.key === "Home" ? 0 : last);
      event.preventDefault();
    }
  });
  const wanted = /step=(\d+)/.exec(location.hash);
  show(wanted ? Number(wanted[1]) : 0);
})();
