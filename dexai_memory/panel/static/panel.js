// dexai-memory panel: plain JavaScript, no build step. Everything goes through the local API
// (/api/...), which calls the same library functions as the `dexai memory` commands.
"use strict";

(function () {
  const params = new URLSearchParams(location.search);
  const token = params.get("token") || sessionStorage.getItem("dexai-token") || "";
  const user = params.get("user") || sessionStorage.getItem("dexai-user") || "";
  if (params.get("token")) {
    sessionStorage.setItem("dexai-token", token);
    if (user) sessionStorage.setItem("dexai-user", user);
    params.delete("token");  // keep the token out of the address bar and history
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + (rest ? "?" + rest : ""));
  }

  const DELETE_UNDO_MS = 4000;
  const CLEAR_UNDO_MS = 8000;
  const LABELS = {
    preference: "Preferences", fact: "Facts", insight: "Insights", warning: "Warnings", goal: "Goals",
    instruction: "Instructions", person: "People", relationship: "People", commitment: "Commitments",
    event: "Events", task: "Tasks", procedure: "Procedures", convention: "Conventions", pattern: "Conventions",
  };
  const ONE = {
    preference: "Preference", fact: "Fact", insight: "Insight", warning: "Warning", goal: "Goal",
    instruction: "Instruction", person: "Person", relationship: "Person", commitment: "Commitment",
    event: "Event", task: "Task", procedure: "Procedure", convention: "Convention", pattern: "Convention",
  };
  // Icons as inline SVG (no emoji font needed); constant markup, never user data.
  const SVG = '<svg viewBox="0 0 24 24" width="16" height="16" fill="none" stroke="currentColor" stroke-width="2" ' +
    'stroke-linecap="round" stroke-linejoin="round" aria-hidden="true" focusable="false">';
  const ICONS = {
    pin: SVG + '<path d="M9 3h6l-1 6 3 3v2H7v-2l3-3z"/><path d="M12 14v7"/></svg>',
    history: SVG + '<circle cx="12" cy="12" r="9"/><path d="M12 7v5l3 2"/></svg>',
    remove: SVG + '<path d="M6 6l12 12M18 6L6 18"/></svg>',
    done: SVG + '<path d="M5 12l5 5L20 7"/></svg>',
  };
  function icon(name) {
    const span = document.createElement("span");
    span.className = "glyph";
    span.innerHTML = ICONS[name];
    return span;
  }
  const $ = (id) => document.getElementById(id);
  const state = {
    facts: null, conflicts: [], filter: "all", query: "", hits: null, manage: false,
    selected: new Set(), openHistory: new Set(), editing: null,
  };

  // ------------------------------------------------------------------ the API
  async function api(method, path, body) {
    const url = new URL(path, location.origin);
    if (user && !url.searchParams.has("user_id")) url.searchParams.set("user_id", user);
    const init = { method, headers: { Authorization: "Bearer " + token } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(url, init);
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok) throw new Error((data && data.error) || res.status + " " + res.statusText);
    return data;
  }

  function showError(message) {
    const box = $("error");
    box.textContent = message;
    box.hidden = !message;
  }

  async function guarded(fn) {
    try {
      showError("");
      return await fn();
    } catch (err) {
      showError(err.message);
      return undefined;
    }
  }

  // ------------------------------------------------------------------ loading
  async function load() {
    const [facts, conflicts] = await Promise.all([api("GET", "/api/facts"), api("GET", "/api/conflicts")]);
    state.facts = facts;
    state.conflicts = conflicts.conflicts;
    if (state.query) await runSearch();
    render();
    loadPersistent();
    loadUpkeep();
    loadHistory();
  }

  async function loadPersistent() {
    try {
      const p = await api("GET", "/api/persistent");
      $("persistent").textContent = p.text || "(nothing yet: memories need confidence 0.6 and importance 6 to be shown)";
    } catch (e) { /* the panel works without it */ }
  }

  async function runSearch() {
    if (!state.query) { state.hits = null; return; }
    const r = await api("GET", "/api/search?limit=500&q=" + encodeURIComponent(state.query));
    state.hits = new Set(r.results.map((x) => x.memory.id));
  }

  function allMemories() {
    if (!state.facts) return [];
    return Object.values(state.facts.categories).flat();
  }

  // ------------------------------------------------------------------ rendering
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "style") node.style.cssText = v;  // CSSOM: allowed by the page's CSP
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  // The header and the Clear confirmation count alike: the memories shown (current) and the past
  // ones (superseded, archived, session notes) a clear removes with them.
  function countText(shown, stored) {
    const past = Math.max(0, (stored || 0) - shown);
    return shown + (shown === 1 ? " memory" : " memories") + (past ? " (+" + past + " past)" : "");
  }

  function clearText(total, shown) {
    const past = total - shown;
    if (total === 0) return "There is nothing to clear.";
    const all = "This will remove all " + total + (total === 1 ? " memory" : " memories");
    return past > 0 && shown <= total ? all + ": the " + shown + " shown and " + past +
      " past (superseded, archived or session notes)." : all + ".";
  }

  function render() {
    const facts = state.facts;
    const count = facts ? facts.count : 0;
    $("pill-count").textContent = countText(count, facts ? facts.stored : 0);
    renderFilters();
    renderConflicts();
    const list = $("list");
    list.replaceChildren();
    let shown = 0;
    for (const [cat, memories] of Object.entries(facts ? facts.categories : {})) {
      if (state.filter !== "all" && state.filter !== cat) continue;
      const visible = memories.filter((m) => !state.hits || state.hits.has(m.id));
      if (!visible.length) continue;
      shown += visible.length;
      const group = el("section", { class: "group", "aria-label": LABELS[cat] || cat, "data-category": cat },
        el("h3", { class: "group-title" }, (LABELS[cat] || cat) + " · " + visible.length));
      for (const m of visible) group.append(card(m));
      list.append(group);
    }
    const empty = count === 0;
    $("empty").hidden = !empty;
    $("filters").hidden = empty;
    if (!empty && shown === 0) {
      list.append(el("p", { class: "muted", role: "status" }, state.query ? "No memory matches “" + state.query + "”." : "Nothing in this category."));
    }
    $("bulkbar").hidden = !state.manage;
    $("bulk-count").textContent = state.selected.size + " selected";
    $("bulk-delete").disabled = state.selected.size === 0;
    $("manage").setAttribute("aria-pressed", String(state.manage));
  }

  function renderFilters() {
    const box = $("filters");
    box.replaceChildren();
    const cats = state.facts ? Object.entries(state.facts.categories) : [];
    const chip = (value, label) => el("button", {
      type: "button", class: "chip", "aria-pressed": String(state.filter === value), "data-filter": value,
      onclick: () => { state.filter = value; render(); },
    }, label);
    box.append(chip("all", "All"));
    for (const [cat, ms] of cats) box.append(chip(cat, (LABELS[cat] || cat) + " " + ms.length));
  }

  function renderConflicts() {
    const box = $("conflicts");
    box.replaceChildren();
    const open = state.conflicts.filter((c) => c.a && c.b);
    box.hidden = open.length === 0;
    if (!open.length) return;
    box.append(el("h3", { class: "group-title" }, "Contradictions to resolve · " + open.length));
    for (const c of open) {
      const choice = (resolution, label) => el("button", {
        type: "button", class: "ghost", "data-resolution": resolution,
        onclick: () => guarded(async () => {
          await api("POST", "/api/contradictions/" + c.id + "/resolve", { resolution });
          toast("Contradiction resolved", null);
          await load();
        }),
      }, label);
      box.append(el("div", { class: "conflict", "data-conflict": c.id },
        el("p", {}, el("strong", {}, "Older: "), c.a.content),
        el("p", {}, el("strong", {}, "Newer: "), c.b.content),
        el("div", { class: "choices" }, choice("b_wins", "Keep newer"), choice("a_wins", "Keep older"),
          choice("both_valid", "Both are true"))));
    }
  }

  function card(m) {
    const cat = m.category;
    const node = el("article", {
      class: "card" + (m.pinned ? " pinned" : ""), "data-id": m.id, tabindex: "0",
      style: "--accent: var(--c-" + (LABELS[cat] ? cat : "other") + ")",
      "aria-label": (m.pinned ? "Pinned memory: " : "Memory: ") + m.content,
    });
    if (state.manage) {
      const box = el("input", { type: "checkbox", class: "select-box", "aria-label": "Select " + m.content });
      box.checked = state.selected.has(m.id);
      box.addEventListener("change", () => {
        if (box.checked) state.selected.add(m.id); else state.selected.delete(m.id);
        render();
      });
      node.append(box);
    }
    const body = el("div", { class: "body" });
    const text = el("div", { class: "text", title: "Click to edit, double-click for the full editor" }, m.content);
    let timer = null;
    text.addEventListener("click", () => {
      if (state.manage) return;
      clearTimeout(timer);
      timer = setTimeout(() => inlineEdit(node, text, m), 220);
    });
    text.addEventListener("dblclick", () => {
      clearTimeout(timer);
      if (!state.manage) fullEdit(node, body, m);
    });
    node.addEventListener("keydown", (e) => {
      if (e.target !== node) return;
      if (e.key === "Enter" && e.shiftKey) { e.preventDefault(); fullEdit(node, body, m); }
      else if (e.key === "Enter") { e.preventDefault(); inlineEdit(node, text, m); }
      else if (e.key === "Delete") { e.preventDefault(); remove([m.id]); }
    });
    const pct = Math.round(Math.max(0, Math.min(1, m.confidence)) * 100);
    const meta = el("div", { class: "meta" },
      (m.mention_count > 1 ? m.mention_count + " mentions · " : "") + "since " + m.created_at.slice(0, 10) +
      (m.project ? " · " + m.project : ""));
    const bar = el("div", { class: "conf", role: "img", "aria-label": "Confidence " + pct + "%", title: "Confidence " + pct + "%" },
      el("div", { style: "width:" + pct + "%" }));
    body.append(text, meta, bar);
    if (state.openHistory.has(m.id)) body.append(el("div", { class: "history", "data-history": m.id }, "Loading history…"));
    const actions = el("div", { class: "actions" },
      el("button", {
        type: "button", class: "icon pin", "aria-pressed": String(!!m.pinned),
        "aria-label": (m.pinned ? "Unpin " : "Pin ") + m.content, title: m.pinned ? "Unpin" : "Pin (at most " + state.facts.max_pins + ")",
        onclick: () => togglePin(m),
      }, icon("pin")),
      isOpenCommitment(m) ? el("button", {
        type: "button", class: "icon done", "aria-label": "Mark done: " + m.content, title: "Mark done",
        onclick: () => markDone(m),
      }, icon("done")) : null,
      el("button", {
        type: "button", class: "icon history-button", "aria-expanded": String(state.openHistory.has(m.id)),
        "aria-label": "History of " + m.content, title: "History", onclick: () => toggleHistory(m),
      }, icon("history")),
      el("button", {
        type: "button", class: "icon delete", "aria-label": "Delete " + m.content, title: "Delete",
        onclick: () => remove([m.id]),
      }, icon("remove")));
    node.append(body, actions);
    if (state.openHistory.has(m.id)) fillHistory(m.id, body.querySelector(".history"));
    return node;
  }

  function pulse(id) {
    const node = document.querySelector('.card[data-id="' + CSS.escape(id) + '"]');
    if (node) { node.classList.add("saved"); setTimeout(() => node.classList.remove("saved"), 1300); }
  }

  // ------------------------------------------------------------------ editing
  function inlineEdit(node, text, m) {
    if (node.querySelector("input.inline, .full-editor")) return;
    const input = el("input", { class: "inline", type: "text", "aria-label": "Edit memory" });
    input.value = m.content;
    text.replaceWith(input);
    input.focus();
    input.select();
    let done = false;
    const cancel = () => { if (!done) { done = true; input.replaceWith(text); node.focus(); } };
    input.addEventListener("keydown", async (e) => {
      if (e.key === "Escape") { e.preventDefault(); cancel(); }
      if (e.key === "Enter") {
        e.preventDefault();
        if (done) return;
        done = true;
        const value = input.value.trim();
        if (!value || value === m.content) { input.replaceWith(text); return; }
        await guarded(async () => {
          await api("PATCH", "/api/memories/" + encodeURIComponent(m.id), { content: value });
          await load();
          pulse(m.id);
        });
      }
    });
    input.addEventListener("blur", () => setTimeout(cancel, 150));
  }

  function fullEdit(node, body, m) {
    if (node.querySelector(".full-editor")) return;
    const form = $("editor-template").content.firstElementChild.cloneNode(true);
    form.content.value = m.content;
    const cats = state.facts.known_categories.includes(m.category) ? state.facts.known_categories
      : [m.category, ...state.facts.known_categories];
    for (const c of cats) form.category.append(el("option", { value: c }, ONE[c] || c));
    form.category.value = m.category;
    const old = Array.from(body.childNodes);
    body.replaceChildren(form);
    form.content.focus();
    const close = () => body.replaceChildren(...old);
    form.querySelector("[data-cancel]").addEventListener("click", close);
    form.addEventListener("keydown", (e) => { if (e.key === "Escape") { e.preventDefault(); close(); node.focus(); } });
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const changes = {};
      const value = form.content.value.trim();
      if (value && value !== m.content) changes.content = value;
      if (form.category.value !== m.category) changes.category = form.category.value;
      if (!Object.keys(changes).length) { close(); return; }
      guarded(async () => {
        await api("PATCH", "/api/memories/" + encodeURIComponent(m.id), changes);
        await load();
        pulse(m.id);
      });
    });
  }

  // ------------------------------------------------------------------ pin, history, delete
  function togglePin(m) {
    guarded(async () => {
      await api("POST", "/api/memories/" + encodeURIComponent(m.id) + (m.pinned ? "/unpin" : "/pin"));
      await load();
      pulse(m.id);
    });
  }

  function isOpenCommitment(m) {
    const info = m.metadata && m.metadata.commitment;
    return (m.type === "COMMITMENT" || (info && typeof info === "object")) &&
      !(info && (info.status === "done" || info.status === "cancelled"));
  }

  function markDone(m) {
    guarded(async () => {
      await api("POST", "/api/memories/" + encodeURIComponent(m.id) + "/done");
      await load();
      toast("Marked done: " + m.content, null);
    });
  }

  function toggleHistory(m) {
    if (state.openHistory.has(m.id)) state.openHistory.delete(m.id); else state.openHistory.add(m.id);
    render();
  }

  async function fillHistory(id, box) {
    try {
      const h = await api("GET", "/api/memories/" + encodeURIComponent(id) + "/history");
      const list = el("ol", {});
      for (const entry of h.chain) {
        const mem = entry.memory;
        const until = mem.valid_until ? mem.valid_until.slice(0, 10) : "now";
        const item = el("li", {}, el("span", {}, mem.content + " (" + (mem.valid_from || mem.created_at).slice(0, 10) + " → " + until + ")"));
        const events = el("ul", {});
        for (const ev of entry.events) {
          events.append(el("li", { class: "event" }, ev.at.slice(0, 16).replace("T", " ") + " " + ev.action + ": " + ev.reason));
        }
        item.append(events);
        list.append(item);
      }
      const parts = [el("strong", {}, "History"), list];
      // the memories consolidation linked to this one (same name or file, an error's fix, a decision's reason)
      const links = (await api("GET", "/api/memories/" + encodeURIComponent(id))).links || [];
      if (links.length) {
        const linked = el("ul", { class: "links" });
        for (const k of links) {
          linked.append(el("li", { class: "event" }, k.kind + " (" + k.reason + "): " +
            (k.other ? k.other.content + (k.other.current ? "" : " (not current)") : "(erased)")));
        }
        parts.push(el("strong", {}, "Linked"), linked);
      }
      box.replaceChildren(...parts);
    } catch (err) {
      box.textContent = "History unavailable: " + err.message;
    }
  }

  let toastTimer = null;
  function toast(message, undo, ms) {
    const box = $("toast");
    $("toast-text").textContent = message;
    const button = $("toast-undo");
    button.hidden = !undo;
    button.onclick = undo ? async () => { box.hidden = true; clearTimeout(toastTimer); await guarded(undo); } : null;
    box.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { box.hidden = true; }, ms || DELETE_UNDO_MS);
  }

  function remove(ids) {
    guarded(async () => {
      await api("POST", "/api/memories/forget", { ids });
      for (const id of ids) state.selected.delete(id);
      await load();
      const n = ids.length;
      toast(n === 1 ? "Memory deleted" : n + " memories deleted", async () => {
        await api("POST", "/api/memories/restore", { ids });
        await load();
      }, DELETE_UNDO_MS);
    });
  }

  // ------------------------------------------------------------------ clear all
  let clearTimer = null;
  async function askClear() {
    await guarded(async () => {
      const r = await api("GET", "/api/clear");
      state.clearCount = r.count;
      $("clear-text").textContent = clearText(r.count, state.facts ? state.facts.count : r.count);
      $("clear-yes").hidden = r.count === 0;
      $("clear-confirm").hidden = false;
      $("clear").hidden = true;
      (r.count ? $("clear-no") : $("clear-no")).focus();
    });
  }

  function closeClear() {
    $("clear-confirm").hidden = true;
    $("clear").hidden = false;
  }

  async function doClear() {
    await guarded(async () => {
      await api("POST", "/api/clear", { count: state.clearCount });
      closeClear();
      await load();
      const bar = $("clearbar");
      bar.hidden = false;
      const started = Date.now();
      clearInterval(clearTimer);
      const tick = () => {
        const left = Math.max(0, CLEAR_UNDO_MS - (Date.now() - started));
        $("clear-seconds").textContent = Math.ceil(left / 1000) + "s";
        $("clear-progress").style.width = (100 * left / CLEAR_UNDO_MS) + "%";
        if (left <= 0) { clearInterval(clearTimer); bar.hidden = true; }
      };
      tick();
      clearTimer = setInterval(tick, 100);
      $("clear-undo").focus();
    });
  }

  async function undoClear() {
    clearInterval(clearTimer);
    $("clearbar").hidden = true;
    await guarded(async () => {
      const r = await api("POST", "/api/undo");
      await load();
      toast("Restored " + r.restored + (r.restored === 1 ? " memory" : " memories"), null);
    });
  }

  // ------------------------------------------------------------------ the sheet
  function setOpen(open) {
    document.body.classList.toggle("closed", !open);
    $("pill").setAttribute("aria-expanded", String(open));
    if (open) $("search").focus(); else $("pill").focus();
  }

  function wire() {
    $("pill").addEventListener("click", () => setOpen(document.body.classList.contains("closed")));
    $("close").addEventListener("click", () => setOpen(false));
    $("scrim").addEventListener("click", () => setOpen(false));
    document.addEventListener("keydown", (e) => {
      if ((e.ctrlKey || e.metaKey) && e.shiftKey && (e.key === "M" || e.key === "m")) {
        e.preventDefault();
        setOpen(document.body.classList.contains("closed"));
      }
    });
    let searchTimer = null;
    $("search").addEventListener("input", (e) => {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => guarded(async () => {
        state.query = e.target.value.trim();
        await runSearch();
        render();
      }), 200);
    });
    $("manage").addEventListener("click", () => {
      state.manage = !state.manage;
      state.selected.clear();
      render();
    });
    $("bulk-cancel").addEventListener("click", () => { state.manage = false; state.selected.clear(); render(); });
    $("bulk-all").addEventListener("click", () => {
      for (const node of document.querySelectorAll(".card[data-id]")) state.selected.add(node.dataset.id);
      render();
    });
    $("bulk-delete").addEventListener("click", () => { if (state.selected.size) remove(Array.from(state.selected)); });
    $("composer").addEventListener("submit", (e) => {
      e.preventDefault();
      const input = $("remember");
      const content = input.value.trim();
      if (!content) return;
      guarded(async () => {
        const r = await api("POST", "/api/memories", { content });
        input.value = "";
        await load();
        pulse(r.memory.id);
        const verb = { added: "Remembered", updated: "Updated", superseded: "Replaced an older memory with", already_known: "Already known:" }[r.status] || "Stored";
        toast(verb + " (" + (ONE[r.memory.category] || r.memory.category) + "): " + r.memory.content, null);
      });
    });
    $("clear").addEventListener("click", askClear);
    $("clear-no").addEventListener("click", closeClear);
    $("clear-yes").addEventListener("click", doClear);
    $("clear-undo").addEventListener("click", undoClear);
  }

  // ------------------------------------------------------------------ activity, consolidation, tab refresh
  // The memory activity feed and the consolidation status, shown beside the persistent context.
  async function loadUpkeep() {
    try {
      const [feed, status] = await Promise.all([api("GET", "/api/activity?limit=15"), api("GET", "/api/consolidation")]);
      renderActivity(feed.events);
      renderConsolidation(status);
    } catch (e) { /* the panel works without them */ }
  }

  // The past Claude Code sessions learned from, each with a button forgetting all it taught (undoable).
  async function loadHistory() {
    try {
      renderHistory((await api("GET", "/api/history/sessions?limit=50")).sessions);
    } catch (e) { /* the panel works without it */ }
  }

  function renderHistory(sessions) {
    const list = $("history");
    list.replaceChildren();
    if (!sessions.length) {
      list.append(el("li", { class: "muted" }, "None yet: `dexai memory learn-history` shows what it would learn."));
      return;
    }
    for (const s of sessions) {
      const days = [s.first_at, s.last_at].filter(Boolean).map((d) => d.slice(0, 10));
      const label = (s.project || s.session_id) + " (" + [...new Set(days)].join(" .. ") + "): " +
        s.prompts + (s.prompts === 1 ? " prompt, " : " prompts, ") + s.memories + (s.memories === 1 ? " memory" : " memories");
      const item = el("li", { "data-session": s.session_id }, el("span", { class: "activity-text" }, label));
      if (s.memories > 0) {
        const drop = el("button", { type: "button", class: "ghost", title: "Forget every memory learned from this session" },
          "Forget");
        drop.addEventListener("click", () => forgetSession(s));
        item.append(" ", drop);
      } else if (s.forgotten_at) {
        item.append(" ", el("span", { class: "muted" }, "forgotten"));
      }
      list.append(item);
    }
  }

  async function forgetSession(s) {
    await guarded(async () => {
      const r = await api("DELETE", "/api/history/sessions/" + encodeURIComponent(s.session_id));
      await load();
      toast("Forgot " + r.forgotten + (r.forgotten === 1 ? " memory" : " memories") + " learned from " +
        (s.project || s.session_id), async () => { await api("POST", "/api/undo"); await load(); });
    });
  }

  function when(iso) {
    const d = new Date(iso);
    return isNaN(d) ? "" : d.toLocaleString();
  }

  function renderActivity(events) {
    const list = $("activity");
    list.replaceChildren();
    if (!events.length) { list.append(el("li", { class: "muted" }, "No activity yet.")); return; }
    for (const ev of events) {
      list.append(el("li", { "data-action": ev.action },
        el("span", { class: "activity-action" }, ev.action.toLowerCase()), " ",
        el("span", { class: "activity-text" }, ev.content), " ",
        el("span", { class: "muted" }, when(ev.at) + (ev.reason ? " (" + ev.reason + ")" : ""))));
    }
  }

  function renderConsolidation(s) {
    const parts = [];
    if (!s.enabled) parts.push("Consolidation is off.");
    if (s.last_run) {
      const r = s.last_run;
      parts.push("Last run " + when(r.at) + ": " + r.merged + " merged, " + r.superseded + " superseded, " +
        r.episodes_summarised + " episodes summarised, " + r.episodes_compressed + " compressed, " +
        (r.links_found || 0) + " new links, " + (r.contradictions_found || 0) + " contradictions found.");
    } else {
      parts.push("Not run yet.");
    }
    if (s.next_run) parts.push("Next run around " + when(s.next_run) + ".");
    parts.push(s.waiting + " memories old enough to consolidate; " + s.contradictions_open + " open contradictions.");
    $("consolidation").textContent = parts.join(" ");
  }

  // Another tab or the agent may have changed memory meanwhile: reload when the tab is shown again
  // (not while an edit or a clear is under way, which a reload would lose).
  function wireRefresh() {
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState !== "visible" || !token || state.editing) return;
      if (document.querySelector("#list .card input:not([type=checkbox]), #list .full-editor")) return;
      if (!$("clearbar").hidden || !$("clear-confirm").hidden) return;
      guarded(load).then(() => document.body.setAttribute("data-refreshed", String(Date.now())));
    });
  }

  wire();
  wireRefresh();
  if (!token) {
    showError("No API token: open the URL `dexai panel` printed (it ends with ?token=...).");
  } else {
    guarded(load).then(() => document.body.setAttribute("data-ready", "1"));
  }
})();
