#!/usr/bin/env node
// A Hearts Arena bot in Node.js: proof that a bot needs nothing of our Python, only the
// protocol in ../../proto/hearts/v1 (see the README.md there).
//
// Run it against a referee with
//   ARENA_ADDRESS=host:port ARENA_TOKEN=secret ARENA_BOT_NAME=js node sample_bots/js/bot.js
// (after `npm ci` in this folder). Optional: ARENA_TLS=1 to use TLS with the system roots, or
// ARENA_TLS_CA=path/to/ca.pem to trust a private CA; ARENA_TLS_CERT=bot.pem with
// ARENA_TLS_KEY=bot.key (both or neither, PEM, the key not under a pass phrase) to send a client
// certificate, for a referee that asks for one (they turn TLS on, as ARENA_TLS_CA does);
// ARENA_GIVE_UP_S, the seconds to keep retrying an unreachable referee (600 by default, `inf`
// for ever; `arena run` sets 15, so that a bot its director no longer runs does not linger),
// counted from the first attempt. As the Python SDK, it pings a quiet connection every 20 s
// (broken after 10 s without an answer), and an attempt with no Welcome within 20 s (or what is
// left of ARENA_GIVE_UP_S, at least 5 s) counts as failed.
//
// It plays like a careful beginner: passes the queen of spades, her guards and high hearts;
// ducks under the card winning the trick; when void, sheds the queen, then high spades, then
// high hearts; otherwise plays low. It reads everything from each DecisionRequest, so it keeps
// no state between decisions; the events are only logged.
//
// Exit codes: 0 when the referee says there are no more games (or on SIGTERM/SIGINT); 1 when
// the referee stays unreachable or removes the bot; 2 when the referee refuses the bot
// (bad token, protocol version, ...) or a setting is missing or bad (an ARENA_ADDRESS that is not
// HOST:PORT or an IPv6 one without its brackets, an ARENA_TLS_CA it cannot read or that holds no
// certificate, ARENA_TLS_CERT without ARENA_TLS_KEY or the other way round, a client certificate
// or key it cannot read, that is not PEM, that holds none, a key under a pass phrase or a key of
// another certificate, ARENA_TLS=0 beside ARENA_TLS_CA or ARENA_TLS_CERT; at the first
// connection, ARENA_TLS at a port that does not speak TLS, a certificate not trusted, out of date
// or not for the address's host, or a referee that asks for a client certificate the bot does
// not send or refuses the one it sends): retrying would get the same answer.

"use strict";

const path = require("path");
const fs = require("fs");
const crypto = require("crypto");
const net = require("net");
const tls = require("tls");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

// grpc-js names an IP address (127.0.0.1, say) as the TLS server name, and Node.js warns of that
// on standard error (DEP0123) at every TLS connection: noise the bot's author can do nothing
// about, mixed into the bot's own lines. That warning alone is dropped; the others still show.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  const code = rest[0] && typeof rest[0] === "object" ? rest[0].code : rest[1];
  if (code === "DEP0123") return;
  return emitWarning.call(process, warning, ...rest);
};

const PROTOCOL_VERSION = 1;
const BOT_VERSION = "0.1.0";
const PROTO_DIR = path.resolve(__dirname, "..", "..", "proto");
const MAX_NAME = 64; // the referee's limit on Hello.bot_name
const DEFAULT_NAME = "js-bot";

// Reconnection: exponential backoff, and give up after this long without a successful Hello.
const BACKOFF_FIRST_MS = 100;
const BACKOFF_MAX_MS = 5000;
const BACKOFF_JITTER = 0.2; // spread the waits so that many bots do not reconnect in lockstep
const GIVE_UP_AFTER_S = 600; // unless ARENA_GIVE_UP_S says otherwise
// How long to wait for the referee to confirm a Goodbye before exiting anyway.
const GOODBYE_WAIT_MS = 500;
// Pings on a quiet connection, as the Python SDK sends them (the protocol guide asks for 10 s or
// more): without them, a referee that vanished (a machine gone, a stopped process: no reset)
// left the bot waiting on its stream for ever, never reconnecting nor giving up.
const KEEPALIVE_TIME_MS = 20000;
const KEEPALIVE_TIMEOUT_MS = 10000;
// A connection attempt with no Welcome within this long (or within what is left of the give-up
// time, at least WELCOME_WAIT_MIN_MS) counts as failed: an address that takes connections but
// never answers held the bot for ever.
const WELCOME_WAIT_MS = 20000;
const WELCOME_WAIT_MIN_MS = 5000;

const EXIT_OK = 0;
const EXIT_GAVE_UP = 1;
const EXIT_REFUSED = 2;
const EXIT_INTERRUPTED = 130; // Ctrl-C, as the Python SDK and shells report it (128 + SIGINT)

// Statuses that mean "this bot, as it is, will never be let in": retrying cannot help.
const REFUSALS = new Set([
  grpc.status.UNAUTHENTICATED,
  grpc.status.PERMISSION_DENIED,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.INVALID_ARGUMENT,
  grpc.status.UNIMPLEMENTED, // not a Hearts Arena referee at this address
]);

const RANKS = "23456789TJQKA";
const QUEEN_OF_SPADES = "QS";
const QUEEN = RANKS.indexOf("Q");
const SAFE_SPADES = 4; // spades below the queen that make keeping her safe

// ---- cards ------------------------------------------------------------------------------

function rank(card) {
  return RANKS.indexOf(card[0]);
}

function suit(card) {
  return card[1];
}

function lowest(cards) {
  return cards.reduce((a, b) => (rank(b) < rank(a) ? b : a));
}

function highest(cards) {
  return cards.reduce((a, b) => (rank(b) > rank(a) ? b : a));
}

// Points a card is worth under the game's rules (hearts may be spot hearts, the jack of
// diamonds may be a bonus), so that the same bot plays the variants sensibly.
function cardPoints(card, rules) {
  if (suit(card) === "H") return rules && rules.spot_hearts ? rank(card) + 2 : 1;
  if (card === QUEEN_OF_SPADES) return rules ? rules.queen_penalty : 13;
  if (card === "JD" && rules) return rules.jack_of_diamonds;
  return 0;
}

// ---- strategy: pure functions of one DecisionRequest --------------------------------------

// The cards to pass: the most dangerous first. The queen and her top guards go unless enough
// low spades protect them; high hearts and high cards follow; a short minor suit is voided.
function choosePass(request) {
  const hand = request.hand;
  const rules = request.state && request.state.rules;
  const count = request.pass_count;
  const queenCounts = !rules || rules.queen_penalty > 0;
  const lowSpades = hand.filter((c) => suit(c) === "S" && rank(c) < QUEEN).length;
  const spadesSafe = lowSpades >= SAFE_SPADES;
  const length = (s) => hand.filter((c) => suit(c) === s).length;
  const minors = ["C", "D"].filter((s) => length(s) > 0);
  const short = minors.sort((a, b) => length(a) - length(b))[0];
  const urgency = (card) => {
    let score = rank(card);
    if (suit(card) === "H") score += 2;
    if (suit(card) === "S" && queenCounts) {
      if (rank(card) >= QUEEN) score += spadesSafe ? -10 : 30;
      else score -= 10; // low spades guard against the queen: keep them
    }
    if (short !== undefined && suit(card) === short && length(short) <= count) score += 15;
    if (cardPoints(card, rules) < 0) score -= 40; // a bonus card is worth keeping
    return score;
  };
  return [...hand].sort((a, b) => urgency(b) - urgency(a)).slice(0, count);
}

// The card to play: one of request.legal_cards.
function choosePlay(request) {
  const legal = request.legal_cards;
  if (legal.length === 1) return legal[0];
  const state = request.state || {};
  const rules = state.rules;
  const trick = state.current_trick || { cards: [] };
  const played = new Set();
  for (const t of state.completed_tricks || []) for (const c of t.cards) played.add(c);
  for (const c of trick.cards) played.add(c);
  // The queen is still out there, in someone else's hand: high spades are dangerous.
  const queenOut = !played.has(QUEEN_OF_SPADES) && !request.hand.includes(QUEEN_OF_SPADES);

  if (trick.cards.length === 0) {
    // Leading: low, in a quiet suit; not hearts, and no spade that could catch the queen.
    const quiet = legal.filter(
      (c) => suit(c) !== "H" && !(suit(c) === "S" && (rank(c) >= QUEEN || !queenOut)),
    );
    return lowest(quiet.length ? quiet : legal);
  }

  const leadSuit = suit(trick.cards[0]);
  const following = suit(legal[0]) === leadSuit;
  if (!following) {
    // Void: shed what would hurt us later.
    if (legal.includes(QUEEN_OF_SPADES) && cardPoints(QUEEN_OF_SPADES, rules) > 0) {
      return QUEEN_OF_SPADES;
    }
    const guards = legal.filter((c) => suit(c) === "S" && rank(c) > QUEEN);
    if (queenOut && guards.length) return highest(guards);
    const hearts = legal.filter((c) => suit(c) === "H");
    return highest(hearts.length ? hearts : legal);
  }

  const top = highest(trick.cards.filter((c) => suit(c) === leadSuit));
  const under = legal.filter((c) => rank(c) < rank(top));
  if (under.length) return highest(under); // duck as high as we safely can
  const noQueen = legal.filter((c) => c !== QUEEN_OF_SPADES);
  const options = noQueen.length ? noQueen : legal;
  const players = state.players || (rules && rules.players) || 4;
  const last = trick.cards.length === players - 1;
  // Forced to win: if last, win with the highest (it rids us of a winner); else hope to be
  // overtaken.
  return last ? highest(options) : lowest(options);
}

// When the strategy throws, the answer of the Python SDK's base class: the highest-ranked cards
// to pass, the lowest-ranked legal card to play.
function fallbackPass(request) {
  return [...request.hand].sort((a, b) => rank(b) - rank(a)).slice(0, request.pass_count);
}

function fallbackPlay(request) {
  return lowest(request.legal_cards);
}

// The strategy's answer, or the fallback's if it throws or gives what cannot be sent: a bug in
// one decision must not end the process (the seat would be forfeited), and an ERROR line lets
// `arena run` count it, as it counts the Python SDK's. Anything that can be sent is, for the
// referee to judge (a wrong card is a fault it names), as the Python SDK does.
function decided(request, strategy, fallback, sendable) {
  // The fallback answers the request as it came: a strategy that emptied its legal_cards (or
  // its hand) before it threw would leave the fallback nothing to choose from.
  const asSent = structuredClone(request);
  let why;
  try {
    const answer = strategy(request);
    if (sendable(answer)) return answer;
    // A pass that is no list failed to serialise: the stream broke, the bot reconnected to the
    // same request, again and again, until its time bank ran out.
    why = `it returned ${JSON.stringify(answer)}, not a list of card codes`;
  } catch (e) {
    why = `it threw ${(e && e.stack) || String(e)}`;
  }
  const id = asSent.request_id;
  log(`ERROR ${strategy.name} on request ${id}, answered with ${fallback.name}: ${why}`);
  return fallback(asSent);
}

// ---- the session ------------------------------------------------------------------------

function log(message) {
  process.stderr.write(`${botName()}: ${message}\n`);
}

function botName() {
  return process.env.ARENA_BOT_NAME || DEFAULT_NAME;
}

function describeEvent(event) {
  if (event.fault_notice) {
    const f = event.fault_notice;
    const sent = f.your_answer ? ` (sent ${f.your_answer})` : "";
    const sub = f.substitute_cards.length ? `; played ${f.substitute_cards.join(" ")} instead` : "";
    const forfeit = f.forfeited ? "; the seat is FORFEITED" : "";
    return (
      `FAULT ${f.kind} in hand ${f.hand_number}, request ${f.request_id}${sent}${sub}: ` +
      `${f.message} [fault ${f.faults} of ${f.faults_allowed} allowed${forfeit}]`
    );
  }
  if (event.time_warning) {
    const w = event.time_warning;
    return `time warning: ${w.time_bank_ms} ms of bank left. ${w.message}`;
  }
  if (event.game_ended) {
    const g = event.game_ended;
    return `game ${g.game_id} over after ${g.hands_played} hands: totals ${g.game_totals.join(
      " ",
    )}, places ${g.placings.join(" ")}. ${g.message}`;
  }
  return null;
}

function loadService() {
  const definition = protoLoader.loadSync("hearts/v1/bot_service.proto", {
    includeDirs: [PROTO_DIR],
    keepCase: true,
    longs: String, // request ids are uint64: keep them exact, echo them unchanged
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return grpc.loadPackageDefinition(definition).hearts.v1.BotService;
}

// ---- settings ---------------------------------------------------------------------------

// A setting the bot cannot work with: one line and exit code 2, as the Python SDK does (retried,
// a typo would look like an unreachable referee for ten minutes).
class SettingError extends Error {}

// gRPC target names (`dns:host:port`, `unix:path`, ...) go to grpc-js as they are.
const TARGET_SCHEMES = ["dns:", "unix:", "unix-abstract:", "ipv4:", "ipv6:", "vsock:"];

function checkedAddress(address) {
  if (TARGET_SCHEMES.some((scheme) => address.startsWith(scheme))) return address;
  const slashes = address.indexOf("://");
  if (slashes >= 0) {
    const rest = address.slice(slashes + 3).replace(/\/+$/, "") || "127.0.0.1:50051";
    throw new SettingError(
      `ARENA_ADDRESS '${address}': give the referee's HOST:PORT without ` +
        `${address.slice(0, slashes)}://, e.g. ${rest}`,
    );
  }
  const colon = address.lastIndexOf(":");
  const host = address.slice(0, Math.max(colon, 0));
  const port = address.slice(colon + 1);
  if (colon < 0 || !host || !/^[0-9]+$/.test(port) || !(+port > 0 && +port <= 65535)) {
    throw new SettingError(
      `ARENA_ADDRESS '${address}': expected the referee's HOST:PORT, e.g. 127.0.0.1:50051`,
    );
  }
  const bracketed = host.startsWith("[") && host.endsWith("]");
  if (bracketed && !net.isIPv6(host.slice(1, -1).split("%")[0])) {
    // grpc-js retried "[127.0.0.1]:50051" for minutes ("Failed to parse DNS address").
    throw new SettingError(
      `ARENA_ADDRESS '${address}': only an IPv6 address goes in brackets, and ` +
        `'${host.slice(1, -1)}' is not one: give HOST:PORT, e.g. 127.0.0.1:50051 or [::1]:50051`,
    );
  }
  if (host.includes(":") && !bracketed) {
    // grpc-js read "::1:50051" as host "::1:50051" on port 443 and retried it for minutes.
    throw new SettingError(
      `ARENA_ADDRESS '${address}': an IPv6 address goes in brackets, [${host}]:${port}`,
    );
  }
  if (!bracketed && !/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?$/.test(host)) {
    // "bot@host", "a..b", "héllo": no resolver reads them, and grpc-js retried for minutes
    // (the Python SDK exits 2 at once on its resolver's verdict).
    throw new SettingError(
      `ARENA_ADDRESS '${address}': that host is not a valid host name; set ARENA_ADDRESS to ` +
        "the referee's HOST:PORT, the host a name of ASCII letters, digits, '-' and '.' or an " +
        "IP address (IPv6 in brackets), e.g. 127.0.0.1:50051",
    );
  }
  return address;
}

function giveUpAfterMs() {
  const text = (process.env.ARENA_GIVE_UP_S || "").trim();
  if (!text) return GIVE_UP_AFTER_S * 1000;
  // A decimal number, as Python's float() reads it: Number() also took "0x10" as 16 s.
  const decimal = /^\+?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text);
  const seconds = /^\+?inf(inity)?$/i.test(text) ? Infinity : decimal ? Number(text) : NaN;
  if (!(seconds >= 0)) {
    throw new SettingError(
      `ARENA_GIVE_UP_S must be a number of seconds, 0 or more (or inf), got '${text}'`,
    );
  }
  return seconds * 1000;
}

// A PEM file's bytes, or one line saying why not (grpc-js would only fail every connection).
// what: the file's part ("CA certificate", ...); variable: the setting that names it, if said.
function readPem(file, what, variable = "") {
  const from = variable ? ` (${variable})` : "";
  let data;
  try {
    data = fs.readFileSync(file);
  } catch (e) {
    const why = { ENOENT: "no such file", EACCES: "permission denied", EISDIR: "a folder" };
    throw new SettingError(
      `cannot read the TLS ${what} '${file}'${from}: ${why[e.code] || e.message}`,
    );
  }
  if (!data.includes("-----BEGIN ")) {
    throw new SettingError(`the TLS ${what} '${file}'${from} is not a PEM file (-----BEGIN ...)`);
  }
  return data;
}

function readCa(file) {
  const data = readPem(file, "CA certificate");
  // A PEM file with no certificate in it (a key, say) was taken, and every connection then
  // failed as if the referee's certificate were untrusted, with a hint to set ARENA_TLS_CA.
  const blocks = data.toString("latin1").match(CERTIFICATE_BLOCK) || [];
  if (!blocks.some(parsesAsCertificate)) {
    throw new SettingError(
      `the TLS CA certificate '${file}' holds no usable certificate ` +
        "(no -----BEGIN CERTIFICATE----- block that parses)",
    );
  }
  return data;
}

// The client certificate chain and its key, checked to go together, as the Python SDK checks
// them: grpc-js given a pair it cannot use failed every connection ("Failed to connect") for the
// ten minutes of retries, naming neither file.
function readClientPair(certFile, keyFile) {
  const cert = readPem(certFile, "client certificate", "ARENA_TLS_CERT");
  const key = readPem(keyFile, "client key", "ARENA_TLS_KEY");
  // The chain's first certificate is the one the referee checks, and the key's.
  const first = (cert.toString("latin1").match(CERTIFICATE_BLOCK) || [])[0];
  let leaf;
  try {
    leaf = new crypto.X509Certificate(first);
  } catch (e) {
    throw new SettingError(
      `ARENA_TLS_CERT '${certFile}' holds no usable certificate (no -----BEGIN CERTIFICATE----- ` +
        "block that parses): give the client certificate there, and its private key in " +
        "ARENA_TLS_KEY",
    );
  }
  let privateKey;
  try {
    privateKey = crypto.createPrivateKey(key);
  } catch (e) {
    if (encrypted(key, e)) {
      // grpc-js takes no pass phrase: every connection would fail.
      throw new SettingError(
        `ARENA_TLS_KEY '${keyFile}' is encrypted with a pass phrase, which grpc-js cannot ` +
          `use: decrypt it (openssl pkey -in ${keyFile} -out bot.key) and give that`,
      );
    }
    throw new SettingError(
      `ARENA_TLS_KEY '${keyFile}' holds no readable private key (-----BEGIN PRIVATE KEY-----): ` +
        `give the private key of the client certificate in ARENA_TLS_CERT '${certFile}'`,
    );
  }
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new SettingError(
      `ARENA_TLS_KEY '${keyFile}' is not the private key of the client certificate in ` +
        `ARENA_TLS_CERT '${certFile}': give the key that was made with that certificate`,
    );
  }
  return { cert, key };
}

// Whether a key that crypto.createPrivateKey refused (error) is under a pass phrase: Node 20
// says "interrupted or cancelled" (it asked for one and had none), older ones
// ERR_MISSING_PASSPHRASE; the PEM's own words say it in any version.
function encrypted(key, error) {
  const text = key.toString("latin1");
  return (
    text.includes("-----BEGIN ENCRYPTED PRIVATE KEY-----") ||
    /Proc-Type:\s*4,ENCRYPTED/.test(text) ||
    ["ERR_MISSING_PASSPHRASE", "ERR_OSSL_CRYPTO_INTERRUPTED_OR_CANCELLED"].includes(error.code)
  );
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

function parsesAsCertificate(pem) {
  try {
    new crypto.X509Certificate(pem);
    return true;
  } catch (e) {
    return false;
  }
}

function usesTls() {
  const flag = tlsFlag();
  const cert = process.env.ARENA_TLS_CERT;
  const key = process.env.ARENA_TLS_KEY;
  // Half a pair cannot be sent: the referee would refuse the bot (or the key would go unused).
  if (cert && !key) {
    throw new SettingError(
      "ARENA_TLS_CERT is set but ARENA_TLS_KEY is not: set ARENA_TLS_KEY to the client " +
        "certificate's private key, or unset ARENA_TLS_CERT",
    );
  }
  if (key && !cert) {
    throw new SettingError(
      "ARENA_TLS_KEY is set but ARENA_TLS_CERT is not: set ARENA_TLS_CERT to the client " +
        "certificate, or unset ARENA_TLS_KEY",
    );
  }
  const files = ["ARENA_TLS_CA", "ARENA_TLS_CERT"].filter((name) => process.env[name]);
  if (flag === "0" && files.length > 0) {
    // Which one was meant cannot be guessed (as the Python SDK says): the file used to win.
    const unset = cert ? [...files, "ARENA_TLS_KEY"] : files;
    throw new SettingError(
      `ARENA_TLS=0 asks for plain text, but ${files.join(" and ")} ` +
        `${files.length > 1 ? "ask" : "asks"} for TLS: unset ARENA_TLS to connect with TLS, ` +
        `or unset ${listed(unset)} to connect in plain text`,
    );
  }
  return files.length > 0 || flag === "1";
}

// "A", "A and B", "A, B and C".
function listed(names) {
  if (names.length < 2) return names.join("");
  return `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
}

// ARENA_TLS is 1 or 0 (or unset): any other value ("true", "yes") is refused, as by the Python
// SDK, rather than read as one or the other.
function tlsFlag() {
  const text = (process.env.ARENA_TLS || "").trim();
  if (!["", "0", "1"].includes(text)) {
    throw new SettingError(
      `ARENA_TLS must be 1 (connect with TLS) or 0 (plain text), got '${text}'`,
    );
  }
  return text;
}

// The TLS settings, checked: { on, ca, cert, key } (the files' bytes, or null).
function tlsSettings() {
  const on = usesTls(); // first: it refuses half a pair, and ARENA_TLS=0 beside a TLS file
  const caFile = process.env.ARENA_TLS_CA;
  const certFile = process.env.ARENA_TLS_CERT;
  const pair = certFile ? readClientPair(certFile, process.env.ARENA_TLS_KEY) : null;
  return {
    on,
    ca: caFile ? readCa(caFile) : null,
    cert: pair && pair.cert,
    key: pair && pair.key,
  };
}

function credentials(settings) {
  if (!settings.on) return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(settings.ca, settings.key, settings.cert);
}

// What to change when a connection fails the way a TLS mismatch makes it fail ("" if not).
// grpc-js names only the symptom: a plain-text bot at a TLS referee gets "Failed to connect"
// (a referee that is not there gets ECONNREFUSED instead), a TLS bot at a plain-text one
// "wrong version number", an untrusted certificate "self-signed certificate" or "unable to
// get local issuer certificate", a certificate for another host name ERR_TLS_CERT_ALTNAME_INVALID,
// a gRPC referee that refuses the client certificate (or its lack) "Failed to connect" again
// (it hangs up once the handshake is done: see clientCertificateRefused), another TLS server that
// does so the words of its alert ("alert certificate required", "alert unknown ca", ...).
const UNTRUSTED = [
  "self-signed certificate",
  "self signed certificate",
  "unable to get local issuer certificate",
  "unable to verify the first certificate",
];

// first: no stream of this run has been welcomed yet.
function tlsHint(details, address, first = true) {
  if (!usesTls() && first && details.includes("Failed to connect")) {
    // Not once plain text has worked in this run: a restart, or the network.
    return (
      ": if the referee uses TLS, set ARENA_TLS=1 (or ARENA_TLS_CA to the CA certificate " +
      "the organiser gives)"
    );
  }
  if (usesTls() && certificateAlert(details)) return refusedCertificateHint();
  if (usesTls() && first && hungUp(details)) {
    // Retried: a referee restarting, or a network failure, looks the same to grpc-js.
    if (!process.env.ARENA_TLS_CERT) {
      return (
        ": if the referee asks for a client certificate, set ARENA_TLS_CERT and ARENA_TLS_KEY " +
        "to the certificate and key the organiser gives"
      );
    }
    return (
      ": if the referee asks for a client certificate, check that ARENA_TLS_CERT is one the " +
      "referee accepts (the organiser gives it)"
    );
  }
  if (usesTls() && /wrong version number/i.test(details)) {
    return (
      `: the referee does not speak TLS on this port: unset ${tlsVariables()} ` +
      "(or ask the organiser for the TLS port)"
    );
  }
  if (usesTls() && details.toLowerCase().includes(EXPIRED)) {
    return (
      ": the referee's certificate has expired (or the CA certificate that signed it): " +
      "the organiser must renew it"
    );
  }
  if (usesTls() && details.toLowerCase().includes(NOT_YET_VALID)) {
    return (
      ": the referee's certificate is not valid yet: check this machine's clock (or ask " +
      "the organiser, whose certificate may start later)"
    );
  }
  if (usesTls() && UNTRUSTED.some((words) => details.toLowerCase().includes(words))) {
    return (
      ": the referee's certificate is not trusted: set ARENA_TLS_CA to the CA certificate " +
      "that signed it (the organiser gives it)"
    );
  }
  if (usesTls() && details.includes(HOSTNAME_MISMATCH)) {
    const host = address.slice(0, address.lastIndexOf(":"));
    return (
      `: the referee's certificate is not for the host ${host}: set ARENA_ADDRESS to a host ` +
      "name the certificate holds (the organiser gives it)"
    );
  }
  return "";
}

// What to change when the referee refuses the bot's client certificate, or its lack of one.
function refusedCertificateHint() {
  if (!process.env.ARENA_TLS_CERT) {
    return (
      ": the referee asks for a client certificate: set ARENA_TLS_CERT and ARENA_TLS_KEY to " +
      "the certificate and key the organiser gives"
    );
  }
  return (
    ": the referee refused the client certificate in ARENA_TLS_CERT (not signed by a CA it " +
    "trusts, or out of date): set ARENA_TLS_CERT and ARENA_TLS_KEY to the certificate and key " +
    "the organiser gives"
  );
}

// OpenSSL's words for the TLS alerts by which a server that says why (a gRPC referee only hangs
// up) refuses a client's certificate, or the lack of one; Node's error messages hold them, and so
// do grpc-js's details.
const CERTIFICATE_ALERTS = [
  "alert certificate required",
  "alert bad certificate",
  "alert certificate expired",
  "alert certificate revoked",
  "alert certificate unknown",
  "alert unsupported certificate",
  "alert unknown ca",
];

function certificateAlert(text) {
  const lower = text.toLowerCase();
  return CERTIFICATE_ALERTS.some((words) => lower.includes(words));
}

// Whether grpc-js's details say only that the connection ended, during or right after the TLS
// handshake: a referee that refuses the client certificate, a network failure or a restart.
function hungUp(details) {
  return (
    details.includes("Failed to connect") ||
    details.includes("disconnected before secure TLS connection was established")
  );
}

// The host and port of a HOST:PORT address, as checked at start (null for a gRPC target name,
// `dns:...`, `unix:...`, which grpc-js resolves its own way).
function hostAndPort(address) {
  if (TARGET_SCHEMES.some((scheme) => address.startsWith(scheme))) return null;
  const colon = address.lastIndexOf(":");
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
  return { host, port: Number(address.slice(colon + 1)) };
}

// How long the connection that checks a hang-up may take (a referee answers in milliseconds).
const PROBE_TIMEOUT_MS = 3000;

// Whether the referee at address hangs up on a TLS client with these settings because of its
// client certificate (or the lack of one), where grpc-js says only "Failed to connect", as for
// a network failure. Told by one more connection, made here with Node's tls module: with TLS 1.3
// the server judges the client's certificate only after the handshake has completed on the
// client's side, and a gRPC server that refuses it hangs up at once, before the first HTTP/2
// frame that it sends to every client it accepts (another server says why in an alert). A
// network failure or a restarting referee does not complete a handshake and then hang up
// without a word. Resolves to true or false, never fails.
function clientCertificateRefused(address, settings) {
  const where = hostAndPort(address);
  if (where === null) return Promise.resolve(false);
  const options = { host: where.host, port: where.port, ALPNProtocols: ["h2"] };
  // An IP address is no TLS server name (Node warns, DEP0123); the certificate is checked
  // against it all the same.
  if (!net.isIP(where.host)) options.servername = where.host;
  if (settings.ca) options.ca = settings.ca;
  if (settings.cert) Object.assign(options, { cert: settings.cert, key: settings.key });
  return new Promise((resolve) => {
    let socket = null;
    let secured = false;
    let settled = false;
    const answer = (refused) => {
      if (settled) return;
      settled = true;
      if (socket) socket.destroy();
      resolve(refused);
    };
    try {
      socket = tls.connect(options, () => {
        secured = true;
        if (socket.alpnProtocol !== "h2") answer(false); // not a gRPC server: not this question
      });
    } catch (e) {
      answer(false);
      return;
    }
    socket.setTimeout(PROBE_TIMEOUT_MS, () => answer(false)); // not certain: retried
    // Nothing is sent: the server's SETTINGS frame comes unasked, and it means "accepted".
    socket.on("data", () => answer(false));
    socket.on("error", (e) => answer(certificateAlert(String(e.message))));
    // A hang-up once the handshake is done; one before it is the network's, or a restart.
    socket.on("end", () => answer(secured));
    socket.on("close", () => answer(secured));
  });
}

// Whether a plain-text HTTP/1 server answers at address (one HEAD request: a gRPC server, which
// speaks HTTP/2 only, answers it with no "HTTP/1.x" status line).
function http1Server(address) {
  const where = hostAndPort(address);
  if (where === null) return Promise.resolve(false);
  return new Promise((resolve) => {
    let settled = false;
    const answer = (yes) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(yes);
    };
    const socket = net.connect({ host: where.host, port: where.port }, () => {
      socket.write("HEAD / HTTP/1.0\r\n\r\n");
    });
    let head = "";
    socket.setTimeout(PROBE_TIMEOUT_MS, () => answer(false));
    socket.on("data", (chunk) => {
      head += chunk.toString("latin1");
      if (head.length >= 8 || !"HTTP/1.".startsWith(head)) answer(head.startsWith("HTTP/1."));
    });
    socket.on("error", () => answer(false));
    socket.on("close", () => answer(head.startsWith("HTTP/1.")));
  });
}

// The variables that turn TLS on, in words ("ARENA_TLS and ARENA_TLS_CA"): a bot with only a
// client certificate was told to unset two it never set.
function tlsVariables() {
  const names = [];
  const ca = process.env.ARENA_TLS_CA;
  const cert = process.env.ARENA_TLS_CERT;
  if (process.env.ARENA_TLS === "1" || (!ca && !cert)) names.push("ARENA_TLS");
  if (ca) names.push("ARENA_TLS_CA");
  if (cert) names.push("ARENA_TLS_CERT", "ARENA_TLS_KEY");
  return names.length > 1 ? `${names.slice(0, -1).join(", ")} and ${names.at(-1)}` : names[0];
}

const HOSTNAME_MISMATCH = "ERR_TLS_CERT_ALTNAME_INVALID";
// Node's words (OpenSSL's) for a certificate of the referee's chain out of date.
const EXPIRED = "certificate has expired";
const NOT_YET_VALID = "certificate is not yet valid";

// Whether a failed connection is certainly a TLS setting's fault (TLS to a plain-text port, an
// untrusted certificate or one for another host, a client certificate refused in an alert), as
// the Python SDK decides; a plain-text bot's "Failed to connect" may be a referee restarting too,
// so that one is retried, and so is a TLS bot's unless clientCertificateRefused says otherwise.
function tlsMismatch(details) {
  if (!usesTls()) return false;
  const lower = details.toLowerCase();
  return (
    /wrong version number/i.test(details) ||
    UNTRUSTED.some((words) => lower.includes(words)) ||
    lower.includes(EXPIRED) ||
    lower.includes(NOT_YET_VALID) ||
    details.includes(HOSTNAME_MISMATCH) ||
    certificateAlert(details)
  );
}

// Whether a failed connection reached a server that does not speak HTTP/2 at all (an HTTP/1
// server, such as the leaderboard's web port): grpc-js says only "Protocol error".
function notGrpc(details) {
  return /Last error: Protocol error/.test(details);
}

const NOT_GRPC_HINT =
  ": the server there does not speak gRPC (an HTTP/1 server: the leaderboard's web port?); " +
  "set ARENA_ADDRESS to the referee's port for bots (arena serve --port)";

function notGrpcHint(details) {
  return notGrpc(details) ? NOT_GRPC_HINT : "";
}

// What to check when the address's host name is not found ("" if it is another failure).
// Retried all the same: the name may not exist yet (a container that has not started).
function unknownHostHint(details) {
  if (!details.includes("Name resolution failed")) return "";
  return ": no such host; check the host name in ARENA_ADDRESS (the organiser gives it)";
}

class Session {
  constructor() {
    // Spaces around it are ignored, as the Python SDK ignores them.
    this.address = checkedAddress((process.env.ARENA_ADDRESS || "").trim());
    this.token = process.env.ARENA_TOKEN || "";
    this.giveUpAfterMs = giveUpAfterMs();
    const BotService = loadService();
    this.tls = tlsSettings();
    this.client = new BotService(this.address, credentials(this.tls), {
      "grpc.keepalive_time_ms": KEEPALIVE_TIME_MS,
      "grpc.keepalive_timeout_ms": KEEPALIVE_TIMEOUT_MS,
      "grpc.keepalive_permit_without_calls": 1,
    });
    this.call = null;
    this.welcomed = false; // whether the referee welcomed the current (or last) stream
    this.everWelcomed = false; // whether these settings ever got a Welcome
    this.backoffMs = BACKOFF_FIRST_MS;
    this.unreachableSince = null;
    this.shutdown = null;
    this.stopping = false;
    this.stopCode = EXIT_OK; // the exit code once stopping: 0 for SIGTERM, 130 for Ctrl-C
    // The last Welcome's session_id while that session may still be live at the referee (its
    // stream broke under us): a reconnect names it in Hello.resume_session_id, so that a referee
    // that has not noticed the break yet (a half-open connection) ends it at once and gives the
    // new session its seat, instead of timing out on the old one.
    this.resumeId = "";
  }

  connect() {
    const call = this.client.Play();
    this.call = call;
    this.welcomed = false;
    let finished = false;
    // The give-up time counts from the first attempt, which it also cuts short.
    const now = Date.now();
    if (this.unreachableSince === null) this.unreachableSince = now;
    const left = this.giveUpAfterMs - (now - this.unreachableSince);
    const waitMs = Math.min(WELCOME_WAIT_MS, Math.max(WELCOME_WAIT_MIN_MS, left));
    let unanswered = false;
    const welcomeTimer = setTimeout(() => {
      if (this.welcomed || finished) return;
      unanswered = true;
      call.cancel();
    }, waitMs);
    call.on("data", (response) => {
      if (response.welcome) clearTimeout(welcomeTimer);
      this.onResponse(call, response);
    });
    // Errors also arrive as a 'status'; without this listener they would crash the process.
    call.on("error", () => {});
    call.on("status", (status) => {
      if (finished) return;
      finished = true;
      clearTimeout(welcomeTimer);
      if (unanswered) {
        status = {
          code: grpc.status.DEADLINE_EXCEEDED,
          details:
            `no Welcome within ${Math.round(waitMs / 1000)} s of connecting: the address takes ` +
            "connections but does not answer as a referee (stopped, overloaded, or not one)",
        };
      }
      this.onStatus(status);
    });
    call.write({
      hello: {
        bot_name: botName(),
        token: this.token,
        protocol_version: PROTOCOL_VERSION,
        bot_version: BOT_VERSION,
        decide_forced_moves: false,
        client_library: `grpc-js/${grpcVersion()}`,
        resume_session_id: this.resumeId,
      },
    });
  }

  onResponse(call, response) {
    if (response.welcome) {
      const w = response.welcome;
      this.welcomed = true;
      this.everWelcomed = true;
      this.resumeId = w.session_id;
      this.backoffMs = BACKOFF_FIRST_MS;
      this.unreachableSince = null;
      log(
        `${w.resumed ? "reconnected; seat taken back" : "connected"} to ${this.address} ` +
          `(session ${w.session_id}, ${w.server_version})${w.message ? ": " + w.message : ""}`,
      );
      // The token decides who plays: a different ARENA_BOT_NAME only misleads the author.
      if (w.bot_name && w.bot_name !== botName()) {
        log(
          `warning: the referee knows this token as bot '${w.bot_name}', not '${botName()}' ` +
            `(ARENA_BOT_NAME): standings and records show '${w.bot_name}'`,
        );
      }
    }
    for (const event of response.events) {
      const line = describeEvent(event);
      if (line) log(line);
    }
    if (response.request) this.answer(call, response.request);
    if (response.shutdown) {
      this.shutdown = response.shutdown;
      this.resumeId = ""; // the referee ended that session: there is nothing to replace
      log(`the referee ends the session: ${response.shutdown.reason} ${response.shutdown.message}`);
    }
  }

  answer(call, request) {
    let decision;
    if (request.kind === "DECISION_KIND_PASS") {
      const cards = decided(request, choosePass, fallbackPass, Array.isArray);
      decision = { request_id: request.request_id, pass_cards: { cards } };
    } else if (request.kind === "DECISION_KIND_PLAY") {
      const card = decided(request, choosePlay, fallbackPlay, () => true);
      decision = { request_id: request.request_id, play_card: { card } };
    } else {
      // The protocol says: let an unknown kind time out rather than guess.
      log(`unknown decision kind ${request.kind}; not answering (update this bot)`);
      return;
    }
    call.write({ decision });
  }

  onStatus(status) {
    this.call = null;
    if (this.stopping) process.exit(this.stopCode);
    if (this.shutdown) {
      const s = this.shutdown;
      this.shutdown = null;
      const again = ["SHUTDOWN_REASON_SERVER_SHUTDOWN", "SHUTDOWN_REASON_KICKED"];
      if (again.includes(s.reason) && s.may_reconnect) {
        const why = s.reason === "SHUTDOWN_REASON_KICKED" ? "kicked" : "the referee restarts";
        this.retryAfter(Math.max(s.reconnect_after_ms, BACKOFF_FIRST_MS), why, "", true);
        return;
      }
      if (s.reason === "SHUTDOWN_REASON_KICKED") {
        // The last line says it, as the Python SDK's does (a ban, a revoked token).
        process.stderr.write(
          `${botName()}: the referee at ${this.address} removed bot '${botName()}': ` +
            `${s.message || "no reason given"}\n`,
        );
        process.exit(EXIT_GAVE_UP);
      }
      process.exit(EXIT_OK);
    }
    // The Hello itself over the referee's message limit (a token of 100 kB): the same Hello
    // every time, so no retry can fit (it was retried until ARENA_GIVE_UP_S).
    const oversized =
      status.code === grpc.status.RESOURCE_EXHAUSTED &&
      !this.welcomed &&
      /over this referee's limit/.test(status.details || "");
    if (REFUSALS.has(status.code) || oversized) {
      const name = grpcStatusName(status.code);
      // As the Python SDK says it: a token pasted with its line break (a CRLF .env file) left
      // "unknown token" alone to send the author checking its characters.
      const spaced =
        status.code === grpc.status.UNAUTHENTICATED && this.token !== this.token.trim()
          ? "; the token (ARENA_TOKEN) begins or ends with a space or a line break: remove it"
          : "";
      process.stderr.write(
        `${botName()}: refused by the referee at ${this.address} (${name}): ` +
          `${status.details}${spaced}\n`,
      );
      process.exit(EXIT_REFUSED);
    }
    // Anything else (UNAVAILABLE above all: a broken stream, a restarting referee) is worth
    // another try: the referee holds the seat for Welcome.reconnect_grace_ms.
    // One line: an OpenSSL error in grpc-js's details ends with a line break.
    const details = (status.details || "stream closed").replace(/\s*\n\s*/g, " ").trim();
    if (!this.everWelcomed && this.tls.on && /wrong version number/i.test(details)) {
      // Not a TLS server: a plain-text referee, or an HTTP/1 server (the leaderboard's web
      // port), where unsetting the TLS variables would not help. One plain request tells.
      http1Server(this.address).then((http1) => {
        this.failed(status.code, details, http1 ? NOT_GRPC_HINT : "");
      });
      return;
    }
    if (this.everWelcomed || !this.tls.on || !details.includes("Failed to connect")) {
      this.failed(status.code, details);
      return;
    }
    // grpc-js says only "Failed to connect", as for a network failure: one more connection of
    // our own tells whether the referee hung up on the client certificate.
    // (A SIGTERM meanwhile exits at once: there is no call to say Goodbye on.)
    clientCertificateRefused(this.address, this.tls).then((refused) => {
      this.failed(status.code, details, refused ? refusedCertificateHint() : "");
    });
  }

  // A stream that ended in failure, with its status code and details; known: what a probe of
  // our own found certain (the referee refused the client certificate, or its lack; an HTTP/1
  // server at the address), "" if nothing.
  failed(code, details, known = "") {
    const why = `${grpcStatusName(code)}: ${details}`;
    let hint = this.welcomed
      ? ""
      : tlsHint(details, this.address, !this.everWelcomed) ||
        notGrpcHint(details) ||
        unknownHostHint(details);
    let certain = tlsMismatch(details) || notGrpc(details);
    if (known) [hint, certain] = [known, true];
    if (hint && !this.everWelcomed && certain) {
      // These settings have never worked, and the answer is the TLS handshake's own (or an
      // HTTP/1 server's): it would fail the same way for the ten minutes of retries.
      process.stderr.write(
        `${botName()}: cannot connect to ${this.address} (${grpcStatusName(code)})${hint}\n`,
      );
      process.exit(EXIT_REFUSED);
    }
    this.retryAfter(this.backoffMs, why, hint);
    this.backoffMs = Math.min(this.backoffMs * 2, BACKOFF_MAX_MS);
  }

  // asked: the referee said how long to wait (Shutdown.reconnect_after_ms); the spread only
  // lengthens that wait, never shortens it.
  retryAfter(delayMs, why, hint = "", asked = false) {
    const now = Date.now();
    if (this.unreachableSince === null) this.unreachableSince = now;
    if (now - this.unreachableSince > this.giveUpAfterMs) {
      process.stderr.write(
        `${botName()}: giving up: no session with the referee at ${this.address} for ` +
          `${this.giveUpAfterMs / 1000} s (ARENA_GIVE_UP_S; last: ${why})${hint}\n`,
      );
      process.exit(EXIT_GAVE_UP);
    }
    const spread = asked ? Math.random() : 2 * Math.random() - 1;
    // Never past the give-up time, as the Python SDK: the last attempt is made as it runs out
    // (a back-off of up to 6 s made a 15 s ARENA_GIVE_UP_S about 20 s).
    const left = this.giveUpAfterMs - (now - this.unreachableSince);
    const wait = Math.max(0, Math.min(left, Math.round(delayMs * (1 + BACKOFF_JITTER * spread))));
    const what = this.welcomed ? "connection lost" : `cannot connect to ${this.address}`;
    log(`${what} (${why})${hint}; reconnecting in ${wait} ms`);
    setTimeout(() => this.connect(), wait);
  }

  stop(signal) {
    this.stopping = true;
    // SIGTERM is a stop that was asked for (exit 0); Ctrl-C exits 130, as the Python SDK does.
    this.stopCode = signal === "SIGINT" ? EXIT_INTERRUPTED : EXIT_OK;
    if (this.call === null) process.exit(this.stopCode);
    try {
      this.call.write({ goodbye: { reason: `received ${signal}` } });
      this.call.end();
    } catch (e) {
      process.exit(this.stopCode);
    }
    setTimeout(() => process.exit(this.stopCode), GOODBYE_WAIT_MS).unref();
  }
}

function grpcVersion() {
  try {
    return require("@grpc/grpc-js/package.json").version;
  } catch (e) {
    return "unknown";
  }
}

function grpcStatusName(code) {
  for (const [name, value] of Object.entries(grpc.status)) if (value === code) return name;
  return `status ${code}`;
}

function main() {
  // As the Python SDK says it: a bot with no address or name used to try localhost:50051 as
  // "js-bot" for ten minutes instead.
  const meaning = {
    ARENA_ADDRESS: "the referee's host:port",
    ARENA_TOKEN: "the bot's token",
    ARENA_BOT_NAME: "its name",
  };
  const missing = Object.keys(meaning).filter((name) => !process.env[name]);
  if (missing.length > 0) {
    process.stderr.write(
      `${botName()}: set ${missing.join(" and ")}: ` +
        `${missing.map((name) => meaning[name]).join(", ")}\n`,
    );
    process.exit(EXIT_REFUSED);
  }
  // Past the referee's limit: a name past its message size limit (100 kB) was retried as a
  // transient failure until ARENA_GIVE_UP_S.
  const nameLength = [...process.env.ARENA_BOT_NAME].length;
  if (nameLength > MAX_NAME) {
    process.stderr.write(
      `${DEFAULT_NAME}: ARENA_BOT_NAME is ${nameLength} characters long: ` +
        `a bot's name is 1 to ${MAX_NAME} characters\n`,
    );
    process.exit(EXIT_REFUSED);
  }
  let session;
  try {
    session = new Session();
  } catch (e) {
    if (!(e instanceof SettingError)) throw e;
    process.stderr.write(`${botName()}: ${e.message}\n`);
    process.exit(EXIT_REFUSED);
  }
  process.on("SIGTERM", () => session.stop("SIGTERM"));
  process.on("SIGINT", () => session.stop("SIGINT"));
  session.connect();
}

module.exports = { choosePass, choosePlay, cardPoints, unknownHostHint, tlsHint };

if (require.main === module) main();
