// The inspection page of tenure. It reads everything through the HTTP API
// of the server that served it (relative URLs: the same origin, so TLS
// works as it does for the page), with the ACL token kept in
// sessionStorage and sent as X-Tenure-Token. It follows blocking queries
// (?index=N&wait=...) and the event stream, so an idle page only waits;
// the one timer counts lease deadlines down in the browser and sends
// nothing. Renewals write no log entry, so while the leases view shows
// live deadlines it waits at most half a second (DEADLINE_WAIT) and takes
// the leader's times left again; in the same way, a group whose workers
// report loads is read at least every ten seconds (LOAD_WAIT). Data is put
// in the page with textContent only.
'use strict';
(function () {
  const TOKEN_KEY = 'tenure.token';
  const WAIT = '5m'; // blocking queries' wait
  const DEADLINE_WAIT = '500ms'; // the leases view's wait while it shows deadlines
  const LOAD_WAIT = '10s'; // the groups view's wait while it shows loads
  const MAX_ROWS = 1000;
  const MAX_EVENTS = 500;
  const MAX_GROUP_KEYS = 2000; // keys of one group the groups view reads
  // byCount orders names the way people count: partitions/2 before
  // partitions/10.
  const byCount = new Intl.Collator('en', { numeric: true });

  const $ = (id) => document.getElementById(id);

  // el builds an element; text children become text nodes.
  function el(tag, cls, ...kids) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    for (const k of kids) {
      if (k === null || k === undefined) continue;
      e.append(k instanceof Node ? k : String(k));
    }
    return e;
  }
  function badge(text, kind) { return el('span', 'badge ' + (kind || ''), text); }
  function td(...kids) { return el('td', '', ...kids); }
  function fill(tbody, rows, empty, cols) {
    if (rows.length === 0) {
      const c = el('td', 'empty', empty);
      c.colSpan = cols;
      rows = [el('tr', '', c)];
    }
    tbody.replaceChildren(...rows);
  }
  function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }
  function escPath(name) { return name.split('/').map(encodeURIComponent).join('/'); }

  // Go duration strings ("1m2.5s", "300ms") in milliseconds.
  function parseDuration(s) {
    if (!s) return NaN;
    const units = { h: 3600e3, m: 60e3, s: 1e3, ms: 1, us: 1e-3, 'µs': 1e-3, ns: 1e-6 };
    let total = 0, sign = 1, rest = s;
    if (rest[0] === '-') { sign = -1; rest = rest.slice(1); }
    const re = /([0-9.]+)(h|ms|m|s|us|µs|ns)/y;
    let m;
    while (rest.length && (m = re.exec(rest))) { total += parseFloat(m[1]) * units[m[2]]; rest = rest.slice(re.lastIndex); re.lastIndex = 0; }
    return rest.length ? NaN : sign * total;
  }
  function fmtMillis(ms) {
    if (ms <= 0) return '0s';
    if (ms < 10e3) return (ms / 1e3).toFixed(1) + 's';
    if (ms < 60e3) return Math.floor(ms / 1e3) + 's';
    if (ms < 3600e3) return Math.floor(ms / 60e3) + 'm' + String(Math.floor(ms / 1e3) % 60).padStart(2, '0') + 's';
    return Math.floor(ms / 3600e3) + 'h' + String(Math.floor(ms / 60e3) % 60).padStart(2, '0') + 'm';
  }
  // fmtLoad shows a reported load with at most four significant digits.
  function fmtLoad(x) {
    return x === undefined || x === null ? '' : String(Number(x.toPrecision(4)));
  }

  function fmtTime(s) {
    if (!s) return '';
    const d = new Date(s);
    return isNaN(d) ? s : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  }

  // ---- the token and the API ----

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

  class APIError extends Error {
    constructor(status, code, message) { super(message); this.status = status; this.code = code; }
  }

  async function api(path, opts) {
    opts = opts || {};
    const headers = { Accept: 'application/json' };
    if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
    const tok = token();
    if (tok) headers['X-Tenure-Token'] = tok;
    let resp;
    try {
      resp = await fetch(path, {
        method: opts.method || 'GET', headers, cache: 'no-store', credentials: 'same-origin',
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body), signal: opts.signal,
      });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      throw new APIError(0, 'unreachable', 'the server does not answer (' + e.message + ')');
    }
    const text = await resp.text();
    let body = null;
    if (text) { try { body = JSON.parse(text); } catch (e) { body = { message: text }; } }
    if (!resp.ok) {
      throw new APIError(resp.status, (body && body.error) || String(resp.status), (body && body.message) || resp.statusText);
    }
    return {
      body: body || {}, index: Number(resp.headers.get('X-Tenure-Index') || 0),
      hash: resp.headers.get('X-Tenure-Content-Hash') || '',
    };
  }

  // ---- following blocking queries ----

  // generation ends every watch of the previous view, filter or token.
  let generation = 0;
  const inflight = new Set();
  function restart() {
    generation++;
    for (const c of inflight) c.abort();
    inflight.clear();
    startView();
  }

  // follow reads path once, then again with ?index=N&wait=..., handing
  // each answer to onData, until the generation changes; with opts.hash
  // it waits on the answer's content hash instead (?hash=H&wait=..., for
  // the local reads that have no index: status and members); opts.wait,
  // a function, gives each request's wait (WAIT by default). Errors back
  // off from 1s to 30s. A blocking read answers only when something
  // changed (or its wait ended), so this costs nothing while nothing does.
  function follow(pathFn, onData, opts) {
    opts = opts || {};
    const gen = generation;
    (async () => {
      let index = 0, hash = '', backoff = 0;
      while (gen === generation) {
        const ctrl = new AbortController();
        inflight.add(ctrl);
        const started = Date.now();
        try {
          let path = pathFn();
          const sep = path.includes('?') ? '&' : '?';
          const wait = opts.wait ? opts.wait() : WAIT;
          if (opts.hash && hash) path += sep + 'hash=' + encodeURIComponent(hash) + '&wait=' + wait;
          else if (!opts.hash && index > 0) path += sep + 'index=' + index + '&wait=' + wait;
          const r = await api(path, { signal: ctrl.signal });
          if (gen !== generation) return;
          backoff = 0;
          hash = r.hash;
          const next = opts.indexOf ? opts.indexOf(r) : r.index;
          // An index that went backwards (a restore, another server)
          // starts over; 0 still blocks (on 1).
          index = next < index ? 0 : Math.max(next, 1);
          await onData(r);
          clearProblem(opts.name);
        } catch (e) {
          if (gen !== generation || e.name === 'AbortError') return;
          if (opts.onError && opts.onError(e)) { index = 0; continue; }
          backoff = Math.min(backoff ? backoff * 2 : 1000, 30000);
          showProblem(opts.name, e, backoff);
          if (!opts.hash) refreshStatus(); // the status's own follow reads it again after the backoff
          index = 0;
          hash = '';
          await sleep(backoff);
          continue;
        } finally {
          inflight.delete(ctrl);
        }
        // Two answers in a row that came back at once (a flood of
        // changes) are spaced a little.
        const took = Date.now() - started, gap = opts.minGap || 100;
        if (took < gap) await sleep(gap - took);
      }
    })();
  }

  // ---- problems and the no-leader banner ----

  const problems = new Map();
  function showProblem(name, e, retryMs) {
    let msg;
    if (e.status === 403 && name === 'groups') {
      msg = 'groups: the token may not list every group (' + e.code + ': ' + e.message + '). Open a group it may read by its name.';
    } else if (e.status === 403) {
      msg = (name ? name + ': ' : '') + 'the token may not read this (' + e.code + ': ' + e.message + '). Narrow the view with a prefix the token may read, or type a token with the right above.';
    } else {
      msg = (name ? name + ': ' : '') + e.message + (e.code && e.status ? ' (' + e.code + ')' : '') + '. Retrying in ' + Math.round(retryMs / 1000) + 's.';
    }
    problems.set(name || '', msg);
    renderProblems();
  }
  function clearProblem(name) {
    if (problems.delete(name || '')) renderProblems();
  }
  function renderProblems() {
    const box = $('problem');
    const msgs = [...problems.values()];
    box.hidden = msgs.length === 0;
    box.replaceChildren(...msgs.map((m) => el('div', '', m)));
  }
  function actionFailed(what, e) {
    problems.set('action', what + ' failed: ' + e.message + (e.code ? ' (' + e.code + ')' : ''));
    renderProblems();
  }

  let status = null; // the last /v1/status
  let statusAt = null; // when it was read
  let leaderKnown = true;
  let statusBusy = false;
  // refreshStatus reads the status once: at start, after a token is
  // typed, and when another read fails (it may be the leader's loss).
  async function refreshStatus() {
    if (statusBusy) return;
    statusBusy = true;
    try {
      applyStatus(await api('/v1/status'));
    } catch (e) {
      showProblem('status', e, 1000);
    } finally {
      statusBusy = false;
    }
  }

  function applyStatus(r) {
    status = r.body;
    statusAt = new Date();
    const had = leaderKnown;
    leaderKnown = !!status.leader_id;
    renderStatus();
    if (had !== leaderKnown) {
      // What is on screen turns grey at once, whether or not the stale
      // reads that follow succeed; then the views read again.
      problems.clear(); // the errors of reads that the switch replaces
      renderProblems();
      if (!leaderKnown) {
        leasesLive = false;
        if (view === 'leases') renderLeases(leasesMore);
        if (view === 'groups' && lastGroup) renderGroup(lastGroup);
      }
      restart();
    }
  }

  function renderStatus() {
    const s = status;
    $('node').replaceChildren(el('b', '', s.node_id), ' ', badge(s.role, s.role === 'leader' ? 'ok' : 'info'));
    document.title = 'tenure · ' + s.node_id;
    const banner = $('no-leader');
    banner.hidden = leaderKnown;
    if (!leaderKnown) {
      $('no-leader-text').textContent = s.node_id + ' (' + s.role + ' in term ' + s.term + ') knows no leader: it cannot reach a quorum of voters, or an election is under way. ' +
        'Nothing is acquired, renewed or expired until one is elected; the leases shown are this server\'s last known state, not what holds now.';
    }
    document.body.classList.toggle('no-leader', !leaderKnown);
    // With a leader, a cluster built to survive a failure (three or more
    // voters) that can take no more, or a voter that does not answer.
    const voters = (s.servers || []).filter((v) => v.suffrage === 'voter');
    const down = (s.servers || []).filter((v) => !v.healthy).map((v) => v.id);
    const exposed = leaderKnown && s.failure_tolerance === 0 && (voters.length >= 3 || down.length > 0);
    $('no-tolerance').hidden = !exposed;
    if (exposed) {
      $('no-tolerance-text').textContent = 'One more voter that fails stops every write (' + s.node_id + ' judges the failure tolerance 0' +
        (down.length ? '; not healthy: ' + down.join(', ') : '') + '). Bring those servers back, or add one.';
    }
    if (view === 'cluster') renderCluster();
  }

  // The heartbeat follows the status by its content hash: the server
  // answers when the role, the leader, the term, readiness, the servers or
  // their health change (not on every entry), so the banner and the cluster view are
  // current and an idle page sends nothing. The indexes, last contact and
  // last token shown are as of that answer.
  function heartbeat() {
    follow(() => '/v1/status', applyStatus, { name: 'status', hash: true, minGap: 1000 });
  }

  // ---- rights ----

  // An action shows only where POST /v1/acl/authorize says the token may
  // take it, as the action's route would decide (with ACLs off, everything
  // is allowed). The checks are those of the routes: revoke on a lease's
  // key (POST /v1/revoke/{key}), groups on a worker id (its drain) and on a
  // key (its controls). A view asks, when it renders, for the rows it shows
  // that have no answer yet, at most MAX_CHECKS per request; the answers
  // are kept for the token, so a render asks nothing new unless new rows
  // came. A new token, or the same one typed again, or another view, asks
  // afresh. Nothing is asked on a timer. A 403 on an action hides its
  // button all the same (the server that answered may lag the leader).
  // Rows carry the answer as data-revoke, data-drain and data-control
  // (allowed, denied, or asking while it is not known), for tests.
  const MAX_CHECKS = 100;
  let rights = new Map(); // JSON of a check -> true or false
  let rightsToken = null; // the token the answers are for
  let rightsEpoch = 0; // answers of an earlier epoch are dropped
  const asking = new Set(); // checks in flight
  function revokeCheck(key) { return { right: 'revoke', key }; }
  function drainCheck(id) { return { right: 'groups', worker: id }; }
  function controlCheck(key) { return { right: 'groups', key }; }
  function resetRights() {
    rights = new Map();
    rightsToken = token();
    rightsEpoch++;
    asking.clear();
  }
  // allowed is true or false once answered, undefined until then.
  function allowed(c) {
    if (rightsToken !== token()) resetRights();
    return rights.get(JSON.stringify(c));
  }
  function denied(c) { rights.set(JSON.stringify(c), false); }
  // answer says it as a row's data attribute: allowed, denied or asking.
  function answer(c) {
    const a = allowed(c);
    return a === undefined ? 'asking' : (a ? 'allowed' : 'denied');
  }
  // ask sends the checks not yet answered nor in flight, and calls
  // rendered (to render again) after each batch's answer. An error other
  // than 403 leaves them unknown (their buttons hidden), to be asked at the
  // view's next render.
  function ask(checks, rendered) {
    if (rightsToken !== token()) resetRights();
    const todo = new Map();
    for (const c of checks) {
      const id = JSON.stringify(c);
      if (!rights.has(id) && !asking.has(id)) todo.set(id, c);
    }
    const ids = [...todo.keys()];
    const epoch = rightsEpoch;
    for (let i = 0; i < ids.length; i += MAX_CHECKS) {
      const batch = ids.slice(i, i + MAX_CHECKS);
      for (const id of batch) asking.add(id);
      api('/v1/acl/authorize', { method: 'POST', body: { checks: batch.map((id) => todo.get(id)) } }).then((r) => {
        if (epoch !== rightsEpoch) return;
        const res = r.body.checks || [];
        batch.forEach((id, j) => rights.set(id, !!(res[j] && res[j].allowed)));
        clearProblem('rights');
        rendered();
      }, (e) => {
        if (epoch !== rightsEpoch) return;
        if (e.status === 403) {
          // This token may not even ask (no token under the deny default
          // policy, or an unknown secret): it may take none of these.
          for (const id of batch) rights.set(id, false);
          rendered();
          return;
        }
        problems.set('rights', 'Asking what your token may do failed: ' + e.message + (e.code ? ' (' + e.code + ')' : '') + '. The actions stay hidden until it is asked again, when the rows change or the view is opened again.');
        renderProblems();
      }).finally(() => {
        if (epoch === rightsEpoch) for (const id of batch) asking.delete(id);
      });
    }
  }

  // ---- cluster ----

  let members = [];
  function watchMembers() {
    follow(() => '/v1/members', (r) => {
      members = r.body.members || [];
      renderCluster();
    }, { name: 'members', hash: true });
  }

  function renderCluster() {
    const s = status;
    if (!s) return;
    const card = (label, value, cls) => el('div', 'card', el('div', 'label', label), el('div', 'value ' + (cls || ''), value));
    $('status-cards').replaceChildren(
      card('this server', s.node_id),
      card('role', s.role, s.role === 'leader' ? 'good' : ''),
      card('leader', s.leader_id || 'none', s.leader_id ? '' : 'bad'),
      card('failure tolerance', s.failure_tolerance === undefined ? '' : s.failure_tolerance, s.failure_tolerance === 0 ? 'bad' : ''),
      card('term', s.term),
      card('commit index', s.commit_index),
      card('applied index', s.applied_index),
      card('last contact', s.last_contact === undefined ? '' : String(s.last_contact)),
      card('last token', s.last_token),
      card('as of', statusAt ? statusAt.toTimeString().slice(0, 8) : ''),
    );
    const servers = (s.servers || []).map((v) => {
      const tr = el('tr', '', td(v.id), td(), td(v.suffrage), td(el('code', '', v.raft_addr)), td(el('code', '', v.http_addr || '')),
        td(v.healthy ? badge('healthy', 'ok') : badge('not healthy', 'bad')));
      tr.dataset.id = v.id;
      tr.dataset.healthy = String(!!v.healthy);
      tr.children[1].append(v.leader ? badge('leader', 'ok') : badge(v.suffrage === 'voter' ? 'follower' : 'non-voter', 'info'));
      if (v.id === s.node_id) tr.children[0].append(' ', badge('this page', 'muted'));
      return tr;
    });
    fill($('servers').tBodies[0], servers, 'no servers in the configuration', 6);
    const rows = members.map((m) => {
      const meta = m.meta || {};
      const details = [];
      if (meta.http) details.push('http ' + meta.http);
      if (meta.groups && meta.groups.length) details.push('groups ' + meta.groups.join(', '));
      if (meta.capacity) details.push('capacity ' + meta.capacity);
      if (meta.draining) details.push('draining');
      return el('tr', '', td(m.name), td(m.role), td(badge(m.status, m.status === 'alive' ? 'ok' : 'bad')), td(el('code', '', m.addr)), td(details.join(' · ')));
    });
    fill($('members').tBodies[0], rows, 'no gossip members', 5);
  }

  // ---- leases ----

  let leases = [];
  let leasesAt = 0; // performance.now() when they were read
  let leasesLive = true; // read from the leader, with deadlines
  let leasesMore = false; // the list has more than the page shows
  function leasePath() {
    const q = new URLSearchParams();
    q.set('limit', String(MAX_ROWS));
    for (const [k, id] of [['prefix', 'lease-prefix'], ['holder', 'lease-holder'], ['state', 'lease-state']]) {
      const v = $(id).value.trim();
      if (v) q.set(k, v);
    }
    if (!leaderKnown) q.set('stale', 'true');
    return '/v1/leases?' + q.toString();
  }
  // A held lease's deadline moves with each renewal, which no index
  // announces: while the view shows one, each wait lasts half a second.
  function showsDeadlines() { return leasesLive && leases.some((l) => l.state === 'held' && l.expires_in); }
  function watchLeases() {
    let drawn = false; // the first answer of a watch is always drawn
    follow(leasePath, (r) => {
      const was = leases;
      leases = r.body.leases || [];
      leasesAt = performance.now();
      const live = leaderKnown, more = !!r.body.next;
      if (drawn && live === leasesLive && more === leasesMore && sameButDeadlines(was, leases)) {
        updateDeadlines();
        return;
      }
      leasesLive = live;
      leasesMore = more;
      drawn = true;
      renderLeases(leasesMore);
    }, { name: 'leases', wait: () => (showsDeadlines() ? DEADLINE_WAIT : WAIT) });
  }
  // sameButDeadlines: the two lists differ in times left at most.
  function sameButDeadlines(a, b) {
    const strip = (l) => JSON.stringify({ ...l, expires_in: undefined });
    return a.length === b.length && a.every((l, i) => strip(l) === strip(b[i]));
  }
  // updateDeadlines puts the times left just read into the rows shown,
  // which the timer counts down from.
  function updateDeadlines() {
    const cells = new Map([...document.querySelectorAll('#leases tr[data-key]')].map((tr) => [tr.dataset.key, tr.querySelector('td.expires')]));
    for (const l of leases) {
      const c = cells.get(l.key), ms = parseDuration(l.expires_in);
      if (!c || !c.dataset.deadline || isNaN(ms)) continue;
      c.dataset.deadline = String(leasesAt + ms);
      c.textContent = fmtMillis(ms);
      c.classList.toggle('late', ms <= 0);
    }
  }

  function renderLeases(more) {
    const revocable = leasesLive ? leases.filter((l) => l.state === 'held').map((l) => revokeCheck(l.key)) : [];
    ask(revocable, () => { if (view === 'leases') renderLeases(leasesMore); });
    const rows = leases.map((l) => {
      const tr = el('tr', '');
      tr.dataset.key = l.key;
      let state;
      if (!leasesLive) {
        state = badge(l.state + ' (last known)', 'muted');
        tr.className = 'stale';
      } else if (l.state === 'held' && l.ending) {
        state = badge('ending: ' + l.ending, 'warn');
      } else if (l.state === 'held') {
        state = badge('held', 'ok');
      } else {
        state = badge('free' + (l.reason ? ': ' + l.reason : ''), 'muted');
      }
      tr.dataset.state = leasesLive ? l.state : 'unknown';
      const expires = td();
      expires.className = 'expires';
      if (l.state === 'held') {
        const ms = parseDuration(l.expires_in);
        if (leasesLive && !isNaN(ms)) {
          expires.dataset.deadline = String(leasesAt + ms);
          expires.textContent = fmtMillis(ms);
        } else {
          expires.textContent = 'leader only';
          expires.title = 'deadlines are known only to the leader';
          expires.classList.add('muted');
        }
      }
      const meta = td();
      for (const [k, v] of Object.entries(l.metadata || {})) meta.append(el('span', 'chip', k + '=' + v));
      const act = td();
      if (l.state === 'held' && leasesLive) tr.dataset.revoke = answer(revokeCheck(l.key));
      if (tr.dataset.revoke === 'allowed') {
        const b = el('button', 'danger small revoke', 'Revoke');
        b.addEventListener('click', () => revoke(l));
        act.append(b);
      }
      tr.append(td(el('code', '', l.key)), td(state), td(l.holder || ''), td(l.token || ''), td(l.state === 'held' ? l.ttl : ''), expires,
        td(fmtTime(l.acquired_at)), meta, act);
      return tr;
    });
    fill($('leases').tBodies[0], rows, 'no leases' + ($('lease-prefix').value ? ' under this prefix' : ''), 9);
    $('lease-count').textContent = leases.length + (more ? '+' : '') + ' leases';
    const note = $('lease-note');
    const notes = [];
    if (more) notes.push('More leases follow: narrow the list with a prefix or holder (the API and `tenure leases list` page through all of them).');
    const refused = revocable.filter((c) => allowed(c) === false).length;
    if (refused) notes.push(refused === revocable.length ? 'Your token may not revoke these leases.' : 'Your token may not revoke ' + refused + ' of these leases.');
    note.hidden = notes.length === 0;
    note.textContent = notes.join(' ');
  }

  async function revoke(l) {
    if (!window.confirm('Revoke the lease of ' + l.key + ' held by ' + l.holder + ' (token ' + l.token + ')?\n\n' +
      'Its renewals are refused at once; the key frees at the lease\'s deadline, when the holder has stopped.')) return;
    try {
      await api('/v1/revoke/' + escPath(l.key), { method: 'POST' });
      clearProblem('action');
    } catch (e) {
      if (e.status === 403) { denied(revokeCheck(l.key)); renderLeases(leasesMore); }
      actionFailed('Revoke of ' + l.key, e);
    }
  }

  // The one timer: deadlines count down in the browser, with no request.
  setInterval(() => {
    if (view !== 'leases') return;
    const now = performance.now();
    for (const c of document.querySelectorAll('#leases td.expires[data-deadline]')) {
      const left = Number(c.dataset.deadline) - now;
      c.textContent = fmtMillis(left);
      c.classList.toggle('late', left <= 0);
    }
  }, 250);

  // ---- groups ----

  let groups = [];
  let selected = '';
  let lastGroup = null; // the chosen group's last answer
  function watchGroups() {
    // Listing every group needs read on every name; a token that may read
    // only some groups opens one by name (#group-name) and follows it
    // alone.
    follow(() => '/v1/groups?limit=1000', (r) => {
      groups = r.body.groups || [];
      if (!groups.some((g) => g.name === selected)) {
        const had = selected;
        selected = groups.length ? groups[0].name : '';
        if (had !== selected) { renderGroups(); restart(); return; }
      }
      renderGroups();
    }, { name: 'groups' });
    if (selected) {
      const name = selected;
      const path = () => '/v1/groups/' + encodeURIComponent(name) + '?limit=' + MAX_ROWS + (leaderKnown ? '' : '&stale=true');
      follow(path, async (r) => {
        // The answer holds the first page of keys: read the others, up to
        // MAX_GROUP_KEYS, and show them in the order people count.
        const g = r.body;
        const gen = generation;
        while (g.next && g.keys.length < MAX_GROUP_KEYS) {
          const p = await api(path() + '&cursor=' + encodeURIComponent(g.next));
          if (gen !== generation) return;
          g.keys = g.keys.concat(p.body.keys || []);
          g.next = p.body.next;
        }
        g.keys.sort((a, b) => byCount.compare(a.key, b.key));
        lastGroup = g; $('group-detail').hidden = false; renderGroup(g);
      }, { name: 'group ' + name, wait: () => (lastGroup && carriesLoads(lastGroup) ? LOAD_WAIT : WAIT) });
    }
  }

  // carriesLoads reports whether a group's view shows loads: they change
  // with every renewal and never move the group's index, so such a group
  // is read again every LOAD_WAIT even when nothing else changed.
  function carriesLoads(g) {
    return (g.balance && g.balance.by === 'load') || (g.workers || []).some((w) => w.load_capacity || w.key_load !== undefined) ||
      g.keys.some((k) => k.load !== undefined);
  }

  function renderGroups() {
    const rows = groups.map((g) => {
      const a = el('a', '', g.name);
      a.href = '#groups';
      a.addEventListener('click', (ev) => { ev.preventDefault(); selected = g.name; renderGroups(); restart(); });
      const tr = el('tr', g.name === selected ? 'selected' : '', td(a), td(g.keys), td(g.assigned), td(g.max_per_worker || 'even spread'));
      tr.dataset.group = g.name;
      return tr;
    });
    fill($('groups').tBodies[0], rows, 'no groups', 4);
    $('group-detail').hidden = !selected;
  }

  function renderGroup(g) {
    ask([...(g.workers || []).map((w) => drainCheck(w.id)), ...g.keys.map((k) => controlCheck(k.key))],
      () => { if (view === 'groups' && lastGroup) renderGroup(lastGroup); });
    $('group-title').textContent = 'Group ' + g.name;
    const stuck = new Set(g.stuck || []);
    const live = (g.workers || []).filter((w) => w.status === 'alive' && !w.draining && !w.drained).length;
    const total = g.key_count === undefined ? g.keys.length : g.key_count;
    const notes = [total + ' keys' + (g.keys.length < total ? ' (' + g.keys.length + ' shown)' : ''), live + ' live workers taking keys'];
    // Keys the token may not read are left out of the answer, and of the
    // workers' counts; only their number is given.
    if (g.hidden_keys) notes.splice(1, 0, g.hidden_keys + ' more hidden: the token may not read them');
    if (g.max_per_worker) notes.push('at most ' + g.max_per_worker + ' per worker');
    if (g.min_workers) notes.push('minimum ' + g.min_workers + ' workers');
    if (stuck.size) notes.push('stuck: ' + [...stuck].join(', '));
    if (!leaderKnown) notes.push('owners are this server\'s last known state');
    $('group-note').textContent = notes.join(' · ');
    const wrows = (g.workers || []).map((w) => {
      const limit = g.max_per_worker || w.capacity || 0;
      const bar = el('div', 'bar');
      const fillBar = el('span', '');
      const denom = Math.max(limit, w.targets, w.holds, 1);
      fillBar.style.width = Math.round(100 * w.holds / denom) + '%';
      if (limit && w.holds > limit) fillBar.className = 'over';
      bar.append(fillBar);
      const load = el('div', 'load', bar, el('span', '', w.holds + ' / ' + w.targets + (limit ? ' (max ' + limit + ')' : '')));
      const st = td(badge(w.status, w.status === 'alive' ? 'ok' : 'bad'));
      st.className = 'status';
      if (w.draining || w.drained) st.append(' ', badge(w.drained ? 'drained' : 'draining', 'warn'));
      if (w.stuck || stuck.has(w.id)) st.append(' ', badge('stuck', 'bad'));
      const act = td();
      if (allowed(drainCheck(w.id)) === true) {
        const draining = w.draining || w.drained;
        const b = el('button', 'small ' + (draining ? '' : 'danger') + ' drain', draining ? 'Undrain' : 'Drain');
        b.addEventListener('click', () => drain(w.id, !draining));
        act.append(b);
      }
      // Loads, from the leader only: the sum of the loads of the keys the
      // worker holds, against the load it announced it can carry.
      let work = fmtLoad(w.key_load) || '—';
      if (w.load_capacity) work += ' / ' + fmtLoad(w.load_capacity);
      if (w.load !== undefined) work += ' (total ' + fmtLoad(w.load) + ')';
      const workCell = td(work);
      workCell.className = 'work';
      const tr = el('tr', (w.stuck || stuck.has(w.id)) ? 'alert' : '', td(w.id), st, td(load), td(w.capacity || '—'), workCell, act);
      tr.dataset.worker = w.id;
      tr.dataset.drain = answer(drainCheck(w.id));
      return tr;
    });
    fill($('group-workers').tBodies[0], wrows, 'no workers in this group', 6);
    const krows = g.keys.map((k) => {
      const owner = k.worker || k.holder || '';
      let state, cls = '';
      if (k.disabled) { state = badge('disabled', 'muted'); cls = 'muted'; }
      else if (!owner) { state = badge('unowned', 'bad'); cls = 'alert'; }
      else if (k.target && owner !== k.target) { state = badge('moving', 'warn'); cls = 'moving'; }
      else state = badge('owned', 'ok');
      if (!leaderKnown) { state = badge((owner ? 'owned' : 'unowned') + ' (last known)', 'muted'); cls = 'stale'; }
      if (stuck.has(owner) || stuck.has(k.target)) cls = 'alert';
      const ownerCell = td(owner);
      ownerCell.className = 'owner';
      const act = td();
      if (allowed(controlCheck(k.key)) === true) {
        const b = el('button', 'small disable', k.disabled ? 'Enable' : 'Disable');
        b.addEventListener('click', () => disableKey(k.key, !k.disabled));
        act.append(b);
      }
      const loadCell = td(fmtLoad(k.load));
      loadCell.className = 'work';
      const tr = el('tr', cls, td(el('code', '', k.key)), td(k.target || ''), ownerCell, td(k.token || ''), loadCell, td(state), act);
      tr.dataset.key = k.key;
      tr.dataset.owner = owner;
      tr.dataset.control = answer(controlCheck(k.key));
      return tr;
    });
    fill($('group-keys').tBodies[0], krows, 'no keys', 7);
  }

  async function drain(id, on) {
    if (on && !window.confirm('Drain worker ' + id + '? The balancer gives it no keys, so it hands back every key it holds.')) return;
    try {
      await api('/v1/workers/' + encodeURIComponent(id) + '/drain', { method: 'POST', body: { draining: on } });
      clearProblem('action');
    } catch (e) {
      if (e.status === 403) { denied(drainCheck(id)); if (lastGroup) renderGroup(lastGroup); }
      actionFailed((on ? 'Drain' : 'Undrain') + ' of ' + id, e);
    }
  }

  async function disableKey(key, on) {
    if (on && !window.confirm('Disable key ' + key + '? No one may acquire it; its holder\'s lease ends as on a revoke.')) return;
    try {
      await api('/v1/controls/' + escPath(key), { method: 'PATCH', body: { disabled: on } });
      clearProblem('action');
    } catch (e) {
      if (e.status === 403) { denied(controlCheck(key)); if (lastGroup) renderGroup(lastGroup); }
      actionFailed((on ? 'Disable' : 'Enable') + ' of ' + key, e);
    }
  }

  // ---- workers ----

  function watchWorkers() {
    follow(() => '/v1/workers?limit=' + MAX_ROWS + (leaderKnown ? '' : '&stale=true'), (r) => {
      const rows = (r.body.workers || []).map((w) => {
        const st = td(badge(w.status, w.status === 'alive' ? 'ok' : (w.status === 'dead' ? 'bad' : 'muted')));
        st.className = 'status';
        if (w.draining || w.drained) st.append(' ', badge(w.drained ? 'drained' : 'draining', 'warn'));
        let holds = 0, targets = 0;
        const held = [];
        for (const k of w.keys || []) {
          holds += (k.holds || []).length;
          targets += (k.targets || []).length;
          for (const h of k.holds || []) held.push(h);
        }
        const list = td();
        list.className = 'keys';
        const shown = held.slice(0, 12);
        for (const h of shown) list.append(el('code', 'chip', h));
        if (held.length > shown.length) list.append(' +' + (held.length - shown.length) + ' more');
        const load = td(holds + ' / ' + targets);
        load.className = 'holds';
        const id = td(w.id);
        id.className = 'id'; // a worker's name on one line
        const tr = el('tr', '', id, st, td((w.groups || []).join(', ')), td(w.capacity || '—'), load, list);
        tr.dataset.worker = w.id;
        return tr;
      });
      fill($('workers').tBodies[0], rows, 'no workers', 6);
    }, { name: 'workers' });
  }

  // ---- events ----

  function watchEvents() {
    const tbody = $('events').tBodies[0];
    tbody.replaceChildren();
    let shown = 0;
    const path = () => {
      const q = new URLSearchParams();
      const p = $('event-prefix').value.trim(), t = $('event-type').value;
      if (p) q.set('prefix', p);
      if (t) q.set('type', t);
      const s = q.toString();
      return '/v1/events' + (s ? '?' + s : '');
    };
    follow(path, (r) => {
      const evs = r.body.events || [];
      const rows = [];
      for (const e of evs.slice(-MAX_EVENTS)) {
        const tr = el('tr', 'ev-' + e.type, td(e.index), td(fmtTime(e.time)), td(badge(e.type + (e.reason && e.reason !== e.type ? ' (' + e.reason + ')' : ''), eventKind(e.type))),
          td(e.key ? el('code', '', e.key) : ''), td(e.holder || ''), td(e.token || ''), td(e.group || ''), td(e.worker || ''), td(e.by || ''));
        rows.unshift(tr);
      }
      if (tbody.querySelector('td.empty')) tbody.replaceChildren();
      tbody.prepend(...rows);
      shown += rows.length;
      while (tbody.rows.length > MAX_EVENTS) tbody.deleteRow(-1);
      if (tbody.rows.length === 0) fill(tbody, [], 'no events yet: waiting for the next one', 9);
      $('event-count').textContent = 'following from index ' + r.body.index + ' · ' + Math.min(shown, MAX_EVENTS) + ' shown';
    }, {
      name: 'events',
      indexOf: (r) => r.body.index || 0,
      onError: (e) => {
        if (e.code !== 'compacted') return false;
        tbody.replaceChildren();
        return true; // read again from the oldest event held
      },
    });
  }
  function eventKind(t) {
    switch (t) {
      case 'acquired': case 'handed_off': return 'ok';
      case 'expired': case 'revoked': case 'stuck': return 'bad';
      case 'ending': case 'drained': case 'control_changed': return 'warn';
      default: return 'info';
    }
  }

  // ---- views ----

  let view = 'cluster';
  function startView() {
    heartbeat();
    switch (view) {
      case 'cluster': watchMembers(); break;
      case 'leases': watchLeases(); break;
      case 'groups': watchGroups(); break;
      case 'workers': watchWorkers(); break;
      case 'events': watchEvents(); break;
    }
  }
  function showView() {
    const want = (location.hash || '#cluster').slice(1);
    view = ['cluster', 'leases', 'groups', 'workers', 'events'].includes(want) ? want : 'cluster';
    for (const s of document.querySelectorAll('section.view')) s.hidden = s.id !== 'view-' + view;
    for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.view === view);
    problems.clear();
    renderProblems();
    resetRights(); // another view, or a token typed in (the same one too): asked afresh
    if (status) renderStatus();
    restart();
  }

  function debounce(f, ms) {
    let t = 0;
    return () => { clearTimeout(t); t = setTimeout(f, ms); };
  }

  async function start() {
    // A token given as ?token= (links of older releases) moves into
    // sessionStorage and out of the address bar.
    const u = new URL(location.href);
    if (u.searchParams.has('token')) {
      sessionStorage.setItem(TOKEN_KEY, u.searchParams.get('token'));
      u.searchParams.delete('token');
      history.replaceState(null, '', u.pathname + u.search + u.hash);
    }
    $('token').value = token();
    $('token-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const v = $('token').value.trim();
      if (v) sessionStorage.setItem(TOKEN_KEY, v); else sessionStorage.removeItem(TOKEN_KEY);
      refreshStatus();
      showView();
    });
    $('token-clear').addEventListener('click', async () => {
      sessionStorage.removeItem(TOKEN_KEY);
      $('token').value = '';
      showView();
    });
    const again = debounce(restart, 300);
    for (const id of ['lease-prefix', 'lease-holder', 'event-prefix']) $(id).addEventListener('input', again);
    for (const id of ['lease-state', 'event-type']) $(id).addEventListener('change', restart);
    for (const f of ['lease-filters', 'event-filters']) $(f).addEventListener('submit', (ev) => { ev.preventDefault(); restart(); });
    $('group-filters').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const name = $('group-name').value.trim();
      if (!name || name === selected) return;
      selected = name;
      lastGroup = null;
      renderGroups();
      restart();
    });
    window.addEventListener('hashchange', showView);
    await refreshStatus();
    showView();
  }
  start();
})();
