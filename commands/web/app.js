// agt serve's page. Everything an agent wrote reaches the page through textContent, never as
// HTML. The server sends the agents (those that need their person first) and, for the agent
// shown, its transcript as server-sent events; a dropped stream resumes after the last seq.
'use strict';

const $ = (id) => document.getElementById(id);
const agents = new Map(); // key (NAME, or HOST:NAME) → the agent as /api/agents has it
let csrf = '';
let current = ''; // the key of the agent shown, '' for the list
let transcript = null; // its EventSource
let lastSeq = 0; // the last seq of its transcript on the page
let retry = null;
let started = false; // the page's listeners are set
let fleet = null; // the fleet's EventSource

const keyOf = (a) => (a.host ? a.host + ':' + a.name : a.name);

// el makes an element with a class and text, never markup.
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function show(id) {
  for (const s of ['signin', 'list', 'agent']) $(s).hidden = s !== id;
}

async function start() {
  let r;
  try {
    r = await fetch('/api/session', { credentials: 'same-origin', cache: 'no-store' });
  } catch (e) {
    $('signinwhy').textContent = 'agt serve does not answer: ' + e;
    show('signin');
    setTimeout(start, 3000);
    return;
  }
  if (!r.ok) {
    $('signinwhy').textContent = (await r.json().catch(() => ({}))).error || r.statusText;
    show('signin');
    return;
  }
  const s = await r.json();
  csrf = s.csrf || '';
  openFleet();
  if (!started) {
    started = true;
    window.addEventListener('hashchange', route);
    setInterval(renderTimes, 10000);
    // A page out of sight holds no stream: a browser allows six connections to a server
    // without TLS, and a phone's battery is worth more. Back in sight, it catches up.
    document.addEventListener('visibilitychange', () => {
      if (document.hidden) {
        if (fleet) fleet.close();
        fleet = null;
        closeTranscript();
        live(false);
      } else {
        openFleet();
        if (current) openTranscript(); // after the last seq on the page
      }
    });
  }
  route(true);
}

// The fleet stream: the whole list at first (and after a reconnect), then what changes.
function openFleet() {
  if (fleet) fleet.close();
  const es = new EventSource('/api/agents');
  fleet = es;
  es.addEventListener('agents', (e) => {
    const m = JSON.parse(e.data);
    if (m.all) agents.clear();
    for (const a of m.agents) {
      if (a.gone) agents.delete(keyOf(a));
      else agents.set(keyOf(a), a);
    }
    render();
  });
  es.onopen = () => live(true);
  es.onerror = () => {
    live(false);
    if (es.readyState === EventSource.CLOSED && fleet === es) {
      // Refused (the session ended?) rather than dropped: look again in a while.
      setTimeout(() => start(), 5000);
    }
  };
}

function live(on) {
  $('live').className = 'dot ' + (on ? 'on' : 'off');
}

function route(again) {
  const k = decodeURIComponent(location.hash.replace(/^#/, ''));
  if (again !== true && k === current && (k === '' ? !$('list').hidden : !$('agent').hidden)) return;
  closeTranscript();
  current = k;
  $('said').textContent = '';
  if (k === '') {
    show('list');
  } else {
    show('agent');
    $('events').replaceChildren();
    delete $('events').dataset.dupes;
    lastSeq = 0;
    openTranscript();
  }
  render();
}

function sorted() {
  return [...agents.values()].sort(
    (a, b) => a.rank - b.rank || (a.host || '').localeCompare(b.host || '') || a.name.localeCompare(b.name)
  );
}

function render() {
  const all = sorted();
  const needs = all.filter((a) => a.needs).length;
  const counts = all.length + ' agent' + (all.length === 1 ? '' : 's') + (needs ? ' · ' + needs + ' need' + (needs === 1 ? 's' : '') + ' you' : '');
  $('summary').textContent = current === '' ? counts : '‹ ' + counts;
  $('summary').href = '#';
  document.title = (needs ? '(' + needs + ') ' : '') + 'agt';
  if (current === '') renderList(all);
  else renderAgent(agents.get(current));
}

function age(since) {
  const t = Date.parse(since);
  if (!t || t < 0) return '';
  const s = Math.max(0, Math.round((Date.now() - t) / 1000));
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm';
  if (s < 86400) return Math.floor(s / 3600) + 'h' + String(Math.floor((s % 3600) / 60)).padStart(2, '0');
  return Math.floor(s / 86400) + 'd';
}

function cost(c) {
  if (c === null || c === undefined) return '';
  return '$' + (c >= 0.1 ? c.toFixed(2) : c.toFixed(4));
}

function renderTimes() {
  for (const t of document.querySelectorAll('[data-since]')) t.textContent = age(t.dataset.since);
}

function renderList(all) {
  const ul = $('agents');
  ul.replaceChildren();
  $('empty').hidden = all.length > 0;
  for (const a of all) {
    const li = el('li', 'card' + (a.needs ? ' needs' : ''));
    li.dataset.agent = keyOf(a);
    const link = el('a', 'agentlink');
    link.href = '#' + encodeURIComponent(keyOf(a));
    const row = el('div', 'row');
    row.append(el('strong', 'name', keyOf(a)), el('span', 'badge ' + a.state, a.state));
    link.append(row);
    const what = a.waits || a.doing || a.error || a.reason;
    if (what) link.append(el('p', a.waits ? 'waits' : 'dim', what));
    const meta = el('p', 'meta');
    const since = el('span', '', age(a.since));
    since.dataset.since = a.since;
    meta.append(el('span', '', a.kind), since);
    if (a.cost_usd !== null && a.cost_usd !== undefined) meta.append(el('span', '', cost(a.cost_usd)));
    link.append(meta);
    li.append(link);
    ul.append(li);
  }
}

function renderAgent(a) {
  $('name').textContent = current;
  if (!a) {
    $('state').textContent = 'gone';
    $('state').className = 'badge gone';
    $('ask').hidden = true;
    return;
  }
  $('state').textContent = a.state + (a.reason ? ' (' + a.reason + ')' : '');
  $('state').className = 'badge ' + a.state;
  $('doing').textContent = a.doing || a.error || '';
  const w = a.waiting_for;
  const asks = !!(w && w.id);
  const appeared = asks && ($('ask').hidden || $('ask').dataset.request !== w.id);
  $('ask').hidden = !asks;
  if (asks) {
    $('ask').dataset.request = w.id;
    $('waits').textContent = a.waits;
    $('input').textContent = w.input ? clip(JSON.stringify(w.input, null, 2), 4000) : '';
    $('input').hidden = !w.input;
    if (appeared) $('ask').scrollIntoView({ block: 'end' });
  } else {
    $('denyform').hidden = true;
  }
  $('send').textContent = a.state === 'running' ? 'Queue' : 'Send';
}

function clip(s, n) {
  return s.length > n ? s.slice(0, n) + '… (' + (s.length - n) + ' more)' : s;
}

// The transcript stream of the agent shown. The browser resumes a dropped stream by itself
// (Last-Event-ID); should it give up, a new one starts after the last seq on the page.
function openTranscript() {
  const url = '/api/agents/' + encodeURIComponent(current) + '/events?view=1' + (lastSeq > 0 ? '&after=' + lastSeq : '');
  const es = new EventSource(url);
  transcript = es;
  es.onmessage = (e) => addEvent(JSON.parse(e.data));
  es.addEventListener('reset', () => {
    // Another agent of the same name: its transcript starts again.
    $('events').replaceChildren();
    delete $('events').dataset.dupes;
    lastSeq = 0;
  });
  es.onopen = () => live(true);
  es.onerror = () => {
    live(false);
    // Closed for good (refused: the agent went, the session ended) rather than dropped: try
    // again after the last seq while the agent is still listed.
    if (es.readyState === EventSource.CLOSED && transcript === es && agents.has(current)) {
      retry = setTimeout(() => {
        if (transcript === es) openTranscript();
      }, 2000);
    }
  };
}

function closeTranscript() {
  if (transcript) transcript.close();
  transcript = null;
  clearTimeout(retry);
}

function addEvent(v) {
  const ol = $('events');
  if (v.seq > 0 && v.seq <= lastSeq) {
    // Had it already: the server resumes after the last seq, so this does not happen; the
    // count tells a test that it did not.
    ol.dataset.dupes = String(+(ol.dataset.dupes || 0) + 1);
    return;
  }
  if (v.seq > 0) lastSeq = v.seq;
  const atEnd = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
  const li = el('li', 'ev ' + (v.style || '') + ' ' + v.type);
  li.dataset.seq = v.seq;
  const t = new Date(v.ts);
  li.append(el('time', '', isNaN(t) ? '' : t.toTimeString().slice(0, 8)), el('span', 'text', v.text));
  ol.append(li);
  while (ol.childElementCount > 2000) ol.firstElementChild.remove();
  if (atEnd) li.scrollIntoView({ block: 'end' });
}

async function act(action, body) {
  const a = agents.get(current);
  $('said').textContent = '…';
  try {
    const r = await fetch('/api/agents/' + encodeURIComponent(current) + '/' + action, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', 'X-Agt-Csrf': csrf },
      body: JSON.stringify(body || {}),
    });
    const m = await r.json().catch(() => ({}));
    $('said').textContent = r.ok ? m.said : action + ' ' + (a ? a.name : current) + ': ' + (m.error || r.statusText);
    $('said').className = r.ok ? 'ok' : 'bad';
    return r.ok;
  } catch (e) {
    $('said').textContent = action + ': ' + e;
    $('said').className = 'bad';
    return false;
  }
}

function wire() {
  $('approve').onclick = () => act('approve', { id: $('ask').dataset.request, always: $('always').checked });
  $('deny').onclick = () => {
    $('denyform').hidden = !$('denyform').hidden;
    if (!$('denyform').hidden) $('denymsg').focus();
  };
  $('denysend').onclick = async () => {
    if (await act('deny', { id: $('ask').dataset.request, message: $('denymsg').value })) {
      $('denymsg').value = '';
      $('denyform').hidden = true;
    }
  };
  $('send').onclick = async () => {
    const text = $('msg').value;
    if (!text.trim()) return;
    const a = agents.get(current);
    if (await act('send', { text, queue: !!a && a.state === 'running' })) $('msg').value = '';
  };
  $('interrupt').onclick = () => act('interrupt');
  $('stop').onclick = () => {
    if (confirm('Stop ' + current + '?')) act('stop');
  };
}

document.addEventListener('DOMContentLoaded', () => {
  wire();
  start();
});
