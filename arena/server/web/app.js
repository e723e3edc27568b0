// The leaderboard page: polls the JSON API and draws standings, recent games and replays.
// Plain DOM code, no framework and nothing fetched from elsewhere; every text goes in through
// textContent, so that nothing a bot author chooses can inject markup.
"use strict";

const REFRESH_MS = 3000;
const SUITS = { C: "♣", D: "♦", H: "♥", S: "♠" };
const SUIT_ORDER = "CDHS";
const RANK_ORDER = "23456789TJQKA";

const GAMES_PAGE = 25;
const state = { replay: null, hand: 0, step: 0, bot: null, wanted: null, downSince: null,
  before: null, oldest: null, newest: null, ladder: null };
// state.ladder: /api/health's `ladder` (running, paused, waiting for the event's start, ...).
// state.newest: the newest game's number the list has shown (a game numbered up to it that the
// server does not have never will be: no use asking again).
// state.before: the games list shows games numbered below it (older pages), or the newest if null.
// state.wanted: the game the address asks for ({ number, hand, step }) while it is not loaded (a
// server not answering): the next refresh tries again.

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A failed call: `status` is the HTTP status, or 0 when the server did not answer at all.
class ApiError extends Error {
  // said: the server's own words (the JSON answer's "error"), "" if none.
  constructor(url, status, said = "") {
    super(status ? `${url}: HTTP ${status}` : `${url}: no answer`);
    this.status = status;
    this.said = said;
  }
}

async function getJSON(url) {
  let response;
  try {
    response = await fetch(url, { cache: "no-store" });
  } catch (e) {
    throw new ApiError(url, 0);
  }
  if (!response.ok) {
    let said = "";
    try {
      said = String((await response.json()).error || "");
    } catch (e) {
      // not JSON (a proxy's page): the status says enough
    }
    throw new ApiError(url, response.status, said);
  }
  return response.json();
}

function fmt(x, digits) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  const text = Number(x).toFixed(digits);
  // -0.3 rounds to "-0": a sign on nothing.
  return /^-0(\.0+)?$/.test(text) ? text.slice(1) : text;
}

function when(seconds) {
  if (!seconds) return "";
  const d = new Date(seconds * 1000);
  return d.toISOString().replace("T", " ").slice(0, 19) + "Z";
}

function cardNode(code, extra) {
  const rank = code[0] === "T" ? "10" : code[0];
  const suit = code[code.length - 1];
  const red = suit === "H" || suit === "D";
  return el("span", { class: `card${red ? " red" : ""}${extra ? " " + extra : ""}`, title: code },
    rank + (SUITS[suit] || suit));
}

function sortCards(cards) {
  return [...cards].sort((a, b) => {
    const s = SUIT_ORDER.indexOf(a[a.length - 1]) - SUIT_ORDER.indexOf(b[b.length - 1]);
    return s !== 0 ? s : RANK_ORDER.indexOf(a[0]) - RANK_ORDER.indexOf(b[0]);
  });
}

// ---- status, standings and games -------------------------------------------------------------

// "1 table", "2 tables".
function counted(n, noun) {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

async function refreshHealth() {
  const pill = document.getElementById("state");
  try {
    const h = await getJSON("/api/health");
    document.getElementById("title").textContent = h.name || "Hearts Arena";
    document.title = h.name || "Hearts Arena";
    const stuck = h.status === "cannot-store";
    const label = h.status === "draining" ? "draining" : stuck ? "cannot store" : h.ladder;
    state.ladder = h.ladder;
    pill.textContent = label;
    pill.className = `pill ${label.split(" ")[0]}`;
    const event = h.event ? ` · event: ${h.event.done} of ${h.event.tables} tables` : "";
    // Games that cannot be stored wait in memory and no table starts: "2 tables playing" read
    // as a healthy ladder.
    document.getElementById("counts").textContent = stuck
      ? `${h.error || "the database cannot store games"}: no table starts until it can ` +
        `(${counted(h.tables, "table")} playing or waiting to be stored)`
      : `${counted(h.sessions, "session")} · ${counted(h.tables, "table")} playing · ` +
        `${counted(h.games, "game")}${event}`;
    state.downSince = null;
  } catch (e) {
    // The counts beside the pill were the last answer's ("4 sessions · 1 table playing"), and
    // nothing said the standings and games below had stopped updating.
    state.downSince = state.downSince || Date.now() / 1000;
    pill.textContent = "unreachable";
    pill.className = "pill down";
    const why = e.status ? `the server answered HTTP ${e.status}` : "the server is not answering";
    document.getElementById("counts").textContent =
      `${why} since ${when(state.downSince).slice(11)}: the standings and games below are as ` +
      `it last showed them; this page tries again every ${REFRESH_MS / 1000} s`;
  }
}

// An interval is known once the bot has a fit and a standard error (se is null with fewer than
// two boards); a null bound beside a known se is open on that side: the bot won (or lost) every
// pair, so nothing in the results bounds its rating there.
function hasInterval(row) {
  return row.elo !== null && row.elo !== undefined && row.se !== null && row.se !== undefined;
}

function intervalText(row) {
  if (row.elo === null || row.elo === undefined) return "";
  if (!hasInterval(row)) return "–";
  const low = row.low === null ? "−∞" : fmt(row.low, 0);
  const high = row.high === null ? "+∞" : fmt(row.high, 0);
  return `${low} … ${high}`;
}

function intervalTitle(row) {
  if (row.elo === null || row.elo === undefined) return "not rated yet";
  if (!hasInterval(row)) return "no interval yet: fewer than two boards played";
  if (row.low === null || row.high === null) {
    return "open-ended: the bot won or lost every pair (or a bot it is measured against did), " +
      "so the results do not bound that side";
  }
  return "95% interval, clustered by board";
}

function intervalBar(row, lo, hi) {
  const bar = el("span", { class: "bar" });
  if (!hasInterval(row) || hi <= lo) return bar;
  const pos = (x) => (100 * (x - lo)) / (hi - lo);
  const left = row.low === null ? 0 : pos(row.low);
  const right = row.high === null ? 100 : pos(row.high);
  const open = `${row.low === null ? " open-low" : ""}${row.high === null ? " open-high" : ""}`;
  const span = el("span", { class: open.trim() });
  span.style.left = `${left}%`;
  span.style.width = `${right - left}%`;
  const mark = el("i");
  mark.style.left = `${pos(row.elo)}%`;
  bar.append(span, mark);
  return bar;
}

async function refreshStandings() {
  const data = await getJSON("/api/standings");
  document.getElementById("fit-note").textContent = data.fit.message;
  const rows = data.bots;
  // The scale spans the estimates and the finite bounds; an open side runs to the bar's end.
  const known = rows.filter(hasInterval).flatMap((r) => [r.elo, r.low, r.high])
    .filter((x) => x !== null);
  const lo = Math.min(...known, 0);
  const hi = Math.max(...known, 0);
  const body = document.querySelector("#standings tbody");
  if (rows.length === 0) {
    body.replaceChildren(emptyRow(11, "No bots yet: the organiser adds each with " +
      "`arena bots add NAME`, and a bot shows here from then on."));
    return;
  }
  body.replaceChildren(
    ...rows.map((r) => {
      // Not "offline" for a revoked bot or an entrant with no account yet: the status says
      // why it cannot play, as the README and /api/standings say it.
      const online = r.status === "banned"
        ? el("span", { class: "banned" }, "banned")
        : r.status === "revoked" || r.status === "unknown"
          ? el("span", { class: "offline", title: r.status === "revoked"
            ? "its token was revoked: the organiser gives it a new one (arena bots add --new-token)"
            : "no account with this name yet (arena bots add)" }, r.status)
          : r.sessions > 0
            ? el("span", { class: "online" }, `● ${r.sessions} (${r.playing} playing)`)
            : el("span", { class: "offline" }, "○ offline");
      const row = el("tr", { dataset: { bot: r.name }, class: state.bot === r.name ? "chosen" : "",
        title: "Show this bot's games (click again for all)" },
        el("td", { class: "num" }, r.rank ?? ""),
        el("td", {}, nameNode(r.name)),
        el("td", { class: "num" }, fmt(r.elo, 0)),
        el("td", { title: intervalTitle(r) }, intervalBar(r, lo, hi),
          el("span", { class: "interval" }, intervalText(r))),
        el("td", { class: "num" }, r.games),
        el("td", { class: "num" }, r.hands),
        el("td", { class: "num" }, fmt(r.points_per_hand, 2)),
        el("td", { class: "num" }, r.faults),
        el("td", { class: "num" }, r.forfeits),
        el("td", { class: "num" }, r.live_mu === null ? "–" : `${fmt(r.live_mu, 1)}±${fmt(r.live_sigma, 1)}`),
        el("td", {}, online));
      row.addEventListener("click", () => {
        location.hash = state.bot === r.name ? "" : `#bot/${encodeURIComponent(r.name)}`;
      });
      return row;
    }));
}

// One row across a table saying why it is empty (an empty table read as a page still loading).
function emptyRow(columns, text) {
  return el("tr", { class: "empty" }, el("td", { colspan: columns }, text));
}

// A bot's name, cut short with an ellipsis past a width (the style's .name) and whole in its
// tooltip: a name may be 64 characters of one word, which pushed the other columns out of view.
function nameNode(name) {
  return el("span", { class: "name", title: name }, name);
}

function seatList(game) {
  const best = Math.min(...game.seats.map((s) => s.placing));
  return game.seats.map((s) =>
    el("span", { class: `seat${game.rated && s.placing === best ? " win" : ""}` },
      nameNode(s.bot), ` (${s.points})`, s.faults ? el("sup", {}, ` ${s.faults}⚠`) : null));
}

function endBadge(game) {
  if (!game.rated) return el("span", { class: `badge ${game.termination}` }, game.termination);
  if (game.seats.some((s) => s.status !== "normal")) return el("span", { class: "badge forfeit" }, "forfeit");
  return el("span", { class: "badge" }, "normal");
}

// Each games request's number: an answer to an older one (the filter or the page changed while
// it was on its way) is dropped, not drawn under the new title.
let gamesAsked = 0;

async function refreshGames() {
  const filter = state.bot ? `&bot=${encodeURIComponent(state.bot)}` : "";
  const page = state.before === null ? "" : `&before=${state.before}`;
  const title = document.getElementById("games-title");
  const body = document.querySelector("#games tbody");
  const asked = ++gamesAsked;
  let data;
  try {
    data = await getJSON(`/api/games?limit=${GAMES_PAGE}${filter}${page}`);
  } catch (e) {
    if (asked !== gamesAsked) return;
    // A #bot/NAME no account has (a typo, an old link) showed everyone's games under the old
    // title, as if the name had been taken.
    if (state.bot && e.status === 404) {
      // With the server's hint for a name that differs only in case ("did you mean 'alice'?"),
      // and no paging: "Older games" was left from the list before.
      const hint = (e.said.match(/did you mean [^?]*\?/) || [""])[0];
      title.textContent = `No bot named ${state.bot}` + (hint ? `: ${hint}` : "");
      body.replaceChildren();
      document.getElementById("older").hidden = true;
      document.getElementById("newest").hidden = true;
    }
    throw e;
  }
  if (asked !== gamesAsked) return;
  const of = state.bot ? ` of ${state.bot}` : "";
  title.textContent = state.before === null ? `Recent games${of}` : `Games${of} before game ${state.before}`;
  // Older games: the API's `before`, one page at a time (only the newest 25 could be reached).
  document.getElementById("newest").hidden = state.before === null;
  document.getElementById("older").hidden = data.games.length < GAMES_PAGE;
  if (data.games.length > 0) state.oldest = data.games[data.games.length - 1].game;
  if (data.games.length > 0 && !state.bot && state.before === null) state.newest = data.games[0].game;
  if (data.games.length === 0) {
    body.replaceChildren(emptyRow(5, state.before !== null
      ? `No game${of} before game ${state.before}: these were the oldest.`
      : state.bot
      ? `${state.bot} has no finished game yet: its games show here as they end.`
      : state.ladder === "paused"
      ? "No finished game yet: the ladder is paused (arena admin resume starts tables again)."
      : state.ladder && state.ladder.startsWith("waiting")
      // Not "once enough bots wait in the lobby": they may all be there, waiting for the start.
      ? "No finished game yet: the event has not started; its tables start at the start time " +
        "the organiser set, and each game shows here when it ends."
      : state.ladder === "over"
      // Not "a table starts once...": none will (its end passed, or every table left seats a
      // banned entrant).
      ? "No game was played: the event is over, and no table will start."
      : "No finished game yet: a table starts once enough bots wait in the lobby, and its " +
        "game shows here when it ends."));
    return;
  }
  body.replaceChildren(
    ...data.games.map((g) => {
      const row = el("tr", { dataset: { game: g.game }, title: g.withheld || g.reason },
        el("td", { class: "num" }, g.game),
        el("td", {}, when(g.finished_at)),
        el("td", {}, g.board),
        el("td", { class: "seats" }, ...seatList(g)),
        el("td", {}, endBadge(g)));
      row.addEventListener("click", () => { location.hash = `#game/${g.game}`; });
      return row;
    }));
}

async function refresh() {
  // The health first: the games list's empty message says why no table starts (state.ladder).
  await Promise.allSettled([refreshHealth()]);
  await Promise.allSettled([refreshStandings(), refreshGames(), refreshReplay()]);
}

// The replay shown, again: a game that did not load (the server was not answering) is tried
// again, and one whose cards were withheld is asked for again until its board is done (it read
// "cards withheld" until the page was reloaded).
async function refreshReplay() {
  if (state.wanted) {
    const { number, hand, step } = state.wanted;
    await openReplay(number, hand, step);
  } else if (state.replay && state.replay.withheld) {
    const number = String(state.replay.game);
    const record = await getJSON(`/api/games/${number}`);
    if (state.replay && String(state.replay.game) === number && !record.withheld) {
      showReplay(record, state.hand, state.step, false);  // the step the address asks for
    }
  }
}

// ---- replay ----------------------------------------------------------------------------------

function penalty(card, rules) {
  const suit = card[card.length - 1];
  if (suit === "H") return rules.spot_hearts ? RANK_ORDER.indexOf(card[0]) + 2 : 1;
  if (card === "QS") return rules.queen_penalty;
  if (card === "JD") return rules.jack_of_diamonds || 0;
  return 0;
}

function stepsOf(hand) {
  // Step 0: the deal; step 1: after the pass (if any); then one step per trick; then the result.
  const passing = hand.passes.some((p) => p.length > 0);
  return (passing ? 2 : 1) + hand.tricks.length + 1;
}

function renderReplay() {
  const record = state.replay;
  if (!record) return;
  const seats = record.spec.seats;
  const hand = record.hands[state.hand];
  const body = document.querySelector("#replay-table tbody");
  const faultsList = document.getElementById("replay-faults");
  if (record.withheld) {
    // Another rotation of the board is still being played: the API gives no cards yet.
    body.replaceChildren(...seats.map((name, s) =>
      el("tr", {}, el("td", {}, s), el("td", {}, name), el("td", {}), el("td", {}, "withheld"),
        el("td", { class: "num" }, hand ? hand.points[s] : ""))));
    document.getElementById("step-label").textContent = "cards withheld";
    document.getElementById("replay-trick").textContent = record.withheld;
    faultsList.replaceChildren(
      ...record.faults.filter((f) => f.hand === state.hand).map((f) =>
        el("li", {}, `${f.bot} (seat ${f.seat}), ${f.trick < 0 ? "the pass" : `trick ${f.trick + 1}`}: ${f.kind}`)));
    return;
  }
  if (!hand) {
    body.replaceChildren();
    document.getElementById("step-label").textContent = "no hand was played";
    document.getElementById("replay-trick").textContent = record.reason;
    faultsList.replaceChildren();
    return;
  }
  const passing = hand.passes.some((p) => p.length > 0);
  const total = stepsOf(hand);
  state.step = Math.max(0, Math.min(state.step, total - 1));
  // An address past the game's last hand or step shows the nearest one: the address says which
  // (it stayed as typed, #game/5/7/0 showing hand 1).
  const shown = `#game/${record.game}/${state.hand + 1}/${state.step}`;
  const asked = location.hash.match(/^#game\/(\d+)\/\d+\/\d+$/);
  if (asked && asked[1] === String(record.game) && location.hash !== shown) remember();
  const firstTrickStep = passing ? 2 : 1;
  const tricksShown = Math.max(0, Math.min(hand.tricks.length, state.step - firstTrickStep + 1));
  const isResult = state.step === total - 1;
  let label;
  if (state.step === 0) label = "Deal";
  else if (passing && state.step === 1) label = `Pass ${hand.pass_direction}`;
  else if (isResult) label = "Hand result";
  else label = `Trick ${tricksShown} of ${hand.tricks.length}`;
  document.getElementById("step-label").textContent = label;

  // Each seat's cards at this step.
  const held = seats.map((_, s) => new Set(hand.dealt[s]));
  if (state.step >= 1 && passing) {
    seats.forEach((_, s) => hand.passes[s].forEach((c) => held[s].delete(c)));
    seats.forEach((_, s) => hand.passes[s].forEach((c) => held[hand.pass_to[s]].add(c)));
  }
  const taken = seats.map(() => 0);
  const kitty = hand.kitty || [];
  for (let t = 0; t < tricksShown; t++) {
    const trick = hand.tricks[t];
    trick.cards.forEach((c, i) => {
      held[(trick.leader + i) % seats.length].delete(c);
      taken[trick.winner] += penalty(c, record.spec.rules);
    });
    // The kitty goes to the first trick's winner, its points with it (they were left out until
    // the hand's result).
    if (t === 0) kitty.forEach((c) => { taken[trick.winner] += penalty(c, record.spec.rules); });
  }
  const current = !isResult && tricksShown > 0 && state.step >= firstTrickStep ? hand.tricks[tricksShown - 1] : null;
  body.replaceChildren(
    ...seats.map((name, s) => {
      let trickCell = "";
      if (current) {
        const i = (s - current.leader + seats.length) % seats.length;
        const code = current.cards[i];
        if (code) trickCell = cardNode(code, s === current.winner ? "took" : s === current.leader ? "led" : "");
      }
      const cards = sortCards([...held[s]]).map((c) =>
        cardNode(c, state.step === 0 && hand.passes[s].includes(c) ? "passed" : ""));
      const points = isResult ? hand.points[s] : taken[s];
      return el("tr", {},
        el("td", {}, s === hand.dealer ? `${s} (dealer)` : s),
        el("td", {}, nameNode(name)),
        el("td", {}, trickCell),
        el("td", {}, ...cards),
        el("td", { class: "num" }, points));
    }));
  let text = "";
  const kittyText = kitty.length ? `the kitty (${kitty.join(" ")})` : "";
  if (state.step === 0 && passing) text = `Highlighted: the cards each seat passes ${hand.pass_direction}.`;
  else if (current && current === hand.tricks[0] && kittyText) {
    text = `${seats[current.leader]} led; ${seats[current.winner]} took the trick and ${kittyText}.`;
  } else if (current) text = `${seats[current.leader]} led; ${seats[current.winner]} took the trick.`;
  else if (isResult) {
    text = `Points after the moon rule: ${hand.points.join(", ")}.`;
    if (hand.moon !== null) text += ` ${seats[hand.moon]} shot the ${hand.sun ? "sun" : "moon"}!`;
    if (!hand.complete) text += " The hand was interrupted.";
    if (state.hand === record.hands.length - 1) text += ` Game: ${record.reason}`;
  }
  if (kittyText && tricksShown === 0 && !isResult) {
    text = `${text} Undealt: ${kittyText}, to the first trick's winner.`.trim();
  }
  document.getElementById("replay-trick").textContent = text;
  faultsList.replaceChildren(
    ...record.faults.filter((f) => f.hand === state.hand).map((f) =>
      el("li", {}, `${f.bot} (seat ${f.seat}), ${f.trick < 0 ? "the pass" : `trick ${f.trick + 1}`}: ${f.kind}: ${f.detail}` +
        (f.substitute.length ? `; played ${f.substitute.join(" ")} instead` : ""))));
}

// Empty the replay's parts, with a title saying why: a game that did not load left the last
// one's deal, meta and controls beneath its "not found" (and the arrow keys still stepped it).
function clearReplay(title, note) {
  state.replay = null;
  document.getElementById("replay-section").hidden = false;
  document.getElementById("replay-title").textContent = title;
  document.getElementById("replay-meta").textContent = note;
  document.querySelector("#replay-section .controls").hidden = true;
  document.getElementById("replay-table").hidden = true;
  document.getElementById("hand-select").replaceChildren();
  document.getElementById("step-label").textContent = "";
  document.getElementById("replay-trick").textContent = "";
  document.getElementById("replay-faults").replaceChildren();
}

// `number` is the address's digits, as text: Number() would round a number past 2^53 to
// another game's.
async function openReplay(number, hand, step) {
  if (state.replay && String(state.replay.game) === number) {
    state.hand = Math.max(0, Math.min(hand, state.replay.hands.length - 1));
    state.step = step;
    document.getElementById("hand-select").value = String(state.hand);
    renderReplay();
    return;
  }
  let record;
  try {
    record = await getJSON(`/api/games/${number}`);
  } catch (e) {
    if (currentGame() !== number) return; // the address moved on meanwhile
    // Asked for again at each refresh: a game still being played (its number is in
    // /api/lobby) shows once it ends, and one that failed to load shows once the server answers.
    state.wanted = { number, hand, step };
    const playing = e.status === 404 && (await isPlaying(number));
    if (currentGame() !== number) return;
    if (playing) {
      clearReplay(`Game ${number} is being played`, "Its replay shows here once it ends " +
        `(this page looks again every ${REFRESH_MS / 1000} s).`);
    } else if (e.status === 404 && state.newest !== null && Number(number) <= state.newest) {
      state.wanted = null;
      clearReplay(`No game ${number}`, "The server has no game of that number. The recent " +
        "games below are the newest; click one to replay it.");
    } else if (e.status === 404) {
      clearReplay(`No game ${number} yet`, "The server has no finished game of that number: a " +
        `game shows here once it ends (this page looks again every ${REFRESH_MS / 1000} s). ` +
        "The recent games below are the newest; click one to replay it.");
    } else {
      clearReplay(`Game ${number}: not loaded yet`, (e.status
        ? `The server answered HTTP ${e.status}.`
        : "The server is not answering.") +
        ` This page tries again every ${REFRESH_MS / 1000} s.`);
    }
    return;
  }
  if (currentGame() !== number) return;
  state.wanted = null;
  showReplay(record, hand, step, true);
}

// Draw a loaded record from (hand, step); `scroll`: bring the replay into view (not when a
// refresh redraws the replay already shown).
function showReplay(record, hand, step, scroll) {
  state.replay = record;
  const r = record;
  const section = document.getElementById("replay-section");
  state.hand = Math.max(0, Math.min(hand, r.hands.length - 1));
  state.step = step;
  section.hidden = false;
  document.querySelector("#replay-section .controls").hidden = false;
  document.getElementById("replay-table").hidden = false;
  document.getElementById("replay-title").textContent = `Replay of game ${r.game} (${r.spec.table_id})`;
  document.getElementById("replay-meta").textContent =
    `Board ${r.spec.board} · ${r.spec.seats.join(", ")} · totals ${r.totals.join(", ")} · ${r.termination} · ${r.reason}`;
  const select = document.getElementById("hand-select");
  select.replaceChildren(...r.hands.map((h, i) => el("option", { value: i }, `${i + 1} (${h.pass_direction})`)));
  select.value = String(state.hand);
  renderReplay();
  if (scroll) section.scrollIntoView({ block: "start" });
}

// Whether game `number` (text) is at a table now, by /api/lobby (false if that fails too).
async function isPlaying(number) {
  try {
    const lobby = await getJSON("/api/lobby");
    return lobby.tables.some((t) => String(t.game) === number);
  } catch (e) {
    return false;
  }
}

// The game number the address asks for (text), or null.
function currentGame() {
  const match = location.hash.match(/^#game\/(\d+)(?:\/(\d+)\/(\d+))?$/);
  return match ? match[1] : null;
}

function move(delta) {
  if (!state.replay) return;
  const hand = state.replay.hands[state.hand];
  if (!hand || state.replay.withheld) return;
  const total = stepsOf(hand);
  if (delta === Infinity) state.step = total - 1;
  else if (delta === -Infinity) state.step = 0;
  else state.step = Math.max(0, Math.min(total - 1, state.step + delta));
  remember();
  renderReplay();
}

function remember() {
  // Keep the address shareable (game/hand/step) without triggering a reload of the replay. The
  // hand as the page numbers it, from 1 (from 0, "hand 2" shared by hand opened the third).
  history.replaceState(null, "", `#game/${state.replay.game}/${state.hand + 1}/${state.step}`);
}

// An address's part as text: decodeURIComponent throws on a stray "%" (#bot/50%), which stopped
// the page before its first refresh, leaving it empty for good.
function decoded(text) {
  try {
    return decodeURIComponent(text);
  } catch (e) {
    return text;
  }
}

function route() {
  const match = location.hash.match(/^#game\/(\d+)(?:\/(\d+)\/(\d+))?$/);
  if (match) openReplay(match[1], Math.max(0, Number(match[2] || 1) - 1), Number(match[3] || 0));
  else if (location.hash.startsWith("#game/")) {
    // #game/abc, #game/-1, a link cut short: it showed the standings as if nothing was asked.
    state.wanted = null;
    clearReplay(`No game ${decoded(location.hash.slice(6))}`,
      "A replay's address is #game/NUMBER (or #game/NUMBER/HAND/STEP, the hand from 1 as " +
      "the replay numbers it, step 0 its deal): click a game below " +
      "to open its replay.");
  } else {
    document.getElementById("replay-section").hidden = true;
    state.replay = null;
    state.wanted = null;
    // #bot/NAME shows that bot's games; anything else, everyone's.
    const bot = location.hash.match(/^#bot\/(.+)$/);
    const chosen = bot ? decoded(bot[1]) : null;
    if (chosen !== state.bot) {
      state.bot = chosen;
      state.before = null;
      refresh();
    }
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("first").addEventListener("click", () => move(-Infinity));
  document.getElementById("prev").addEventListener("click", () => move(-1));
  document.getElementById("next").addEventListener("click", () => move(1));
  document.getElementById("last").addEventListener("click", () => move(Infinity));
  // Back to the list as it was: the bot's games it was opened from, at the same page (closing
  // went to everyone's newest games).
  document.getElementById("close-replay").addEventListener("click", () => {
    location.hash = state.bot ? `#bot/${encodeURIComponent(state.bot)}` : "";
  });
  // A page asked for while the server is not answering: the header says so already, and the
  // 3 s refresh asks for that page again; the failure was an uncaught error in the console.
  const page = (before) => {
    state.before = before;
    refreshGames().catch(() => {});
  };
  document.getElementById("older").addEventListener("click", () => page(state.oldest));
  document.getElementById("newest").addEventListener("click", () => page(null));
  document.getElementById("hand-select").addEventListener("change", (e) => {
    state.hand = Number(e.target.value);
    state.step = 0;
    remember();
    renderReplay();
  });
  document.addEventListener("keydown", (e) => {
    if (!state.replay) return;
    if (e.key === "ArrowRight") move(1);
    else if (e.key === "ArrowLeft") move(-1);
    else if (e.key === "Home") move(-Infinity);
    else if (e.key === "End") move(Infinity);
  });
  window.addEventListener("hashchange", route);
  route();
  refresh();
  setInterval(refresh, REFRESH_MS);
});
