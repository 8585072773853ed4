/* Credits ID profile cards. Served at <provider>/embed/v1/widget.js; see docs/widgets.md.

   Every element with data-credits-key and data-credits-profile (one card),
   data-credits-profiles (a grid of compact cards) or data-credits-roster (a roster's grid, the key
   being its owner's) gets the card(s) in an open shadow root when it comes near the viewport. Optional: data-credits-theme="light|dark" (default: the reader's
   prefers-color-scheme), data-credits-heading="2".."6" (the name's heading level, default 3).

   On any failure (unknown or revoked key, a page outside the key's domains, no such profile,
   429, network error, unexpected data) the element is left as it was, and the page's console
   gets at most one warning from this script. No framework, no eval, no inline style or event
   handler, no innerHTML: the styles are a constructable style sheet, which a host page's
   `style-src` without 'unsafe-inline' still allows. */
(function () {
  "use strict";

  var script = document.currentScript;
  if (!script || !window.fetch || !window.IntersectionObserver || !window.WeakSet ||
      !Element.prototype.attachShadow) { return; }
  var MARK = Symbol.for("credits-id-widget");
  if (window[MARK]) { return; } // a second copy of the script on the page stands down
  window[MARK] = true;

  var API = new URL(".", script.src).href; // .../embed/v1/
  var MAX_IDS = 24; // per request (the server's limit)
  var MAX_PAGES = 10; // of a roster's cards (a roster holds at most 100 profiles: five pages)
  var ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  var OPTIONAL_TEXT = ["city", "country", "avatarUrl"];
  var warned = false;
  var seen = new WeakSet();
  var queue = [];
  var sheet = null;

  var CSS = [
    ":host{display:block}",
    ":host([hidden]){display:none}",
    ".root{all:initial;display:block;box-sizing:border-box;font:14px/1.45 system-ui,-apple-system,'Segoe UI',",
    "Roboto,Helvetica,Arial,sans-serif;color:var(--fg);text-align:start;",
    "--bg:#fff;--fg:#1d1d1f;--muted:#5c5c66;--line:#dcdce3;--soft:#f3f3f7;--link:#3346d3;--focus:#3346d3}",
    ".dark{--bg:#1f2024;--fg:#f1f1f4;--muted:#b0b0bb;--line:#3a3b42;--soft:#2b2c33;--link:#a9b6ff;--focus:#a9b6ff}",
    "@media (prefers-color-scheme:dark){.root:not(.light){--bg:#1f2024;--fg:#f1f1f4;--muted:#b0b0bb;",
    "--line:#3a3b42;--soft:#2b2c33;--link:#a9b6ff;--focus:#a9b6ff}}",
    "*,*::before,*::after{box-sizing:border-box}",
    "h2,h3,h4,h5,h6,p,ul,ol,li,figure{margin:0;padding:0;font:inherit;color:inherit}",
    "ul,ol{list-style:none}",
    ".card{display:block;max-width:420px;padding:16px;border:1px solid var(--line);border-radius:12px;",
    "background:var(--bg);overflow-wrap:anywhere}",
    ".head{display:flex;gap:12px;align-items:center}",
    ".avatar{flex:none;width:56px;height:56px;border-radius:50%;object-fit:cover;background:var(--soft);",
    "display:flex;align-items:center;justify-content:center;font-weight:700;font-size:20px;color:var(--muted)}",
    ".name{font-size:18px;font-weight:700;line-height:1.25}",
    ".muted{color:var(--muted)}",
    ".tags{display:flex;flex-wrap:wrap;gap:6px;margin-top:12px}",
    ".tags li{padding:2px 8px;border-radius:999px;background:var(--soft);font-size:12px}",
    ".count{margin-top:10px}",
    ".count strong{font-size:18px}",
    ".sub{margin-top:14px;font-size:12px;font-weight:700;text-transform:uppercase;letter-spacing:.04em;",
    "color:var(--muted)}",
    ".rows li{padding:6px 0;border-top:1px solid var(--line)}",
    ".rows li:first-child{border-top:0}",
    ".title{font-weight:600}",
    ".meta{display:block;font-size:12px;color:var(--muted)}",
    ".foot{margin-top:14px;font-size:13px}",
    "a{color:var(--link);text-decoration:underline;text-underline-offset:2px}",
    "a:focus-visible{outline:2px solid var(--focus);outline-offset:2px;border-radius:2px}",
    ".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:12px}",
    ".grid .card{padding:12px;max-width:none;height:100%}",
    ".grid .head{flex-direction:column;align-items:flex-start;gap:8px}",
    ".grid .avatar{width:44px;height:44px;font-size:16px}",
    ".grid .name{font-size:15px}",
    ".grid .tags{margin-top:8px}",
    ".grid .count{margin-top:6px}",
    ".grid .count strong{font-size:15px}"
  ].join("");

  function warn(text) {
    if (!warned) {
      warned = true;
      console.warn("Credits ID widget: " + text);
    }
  }

  // -- Reading the data: shapes are checked before anything is drawn ---------------------------

  function isText(value) { return typeof value === "string" && value.length > 0 && value.length < 1000; }
  function isCount(value) { return typeof value === "number" && value >= 0 && Math.floor(value) === value; }
  function isWebUrl(value) {
    try { return /^https?:$/.test(new URL(value).protocol); } catch (e) { return false; }
  }
  function textList(value) { return Array.isArray(value) && value.every(isText); }

  function validCard(c) {
    return !!c && ID.test(c.id) && isText(c.name) && isWebUrl(c.url) && isCount(c.creditCount) &&
      OPTIONAL_TEXT.every(function (f) { return c[f] === null || isText(c[f]); }) &&
      (c.avatarUrl === null || isWebUrl(c.avatarUrl)) && textList(c.topRoles) &&
      Array.isArray(c.recentCredits) && c.recentCredits.every(function (r) {
        return !!r && isText(r.title) && (r.album === null || isText(r.album)) &&
          /^\d{4}-\d{2}-\d{2}$/.test(r.releaseDate) && textList(r.roles);
      }) &&
      Array.isArray(c.charts) && c.charts.every(function (r) {
        return !!r && isText(r.chartName) && isCount(r.position);
      });
  }

  var REASONS = {
    401: "the key is unknown or revoked",
    403: "this page's domain is not one of the key's domains",
    404: "no roster with that id is the key owner's",
    429: "the key's request budget is spent for now"
  };

  // One GET of the widget API with the key: the answer's `data` when it is {result: "ok"}, or a
  // rejection with the reason.
  function get(path, key) {
    return fetch(API + path, {
      headers: { "x-api-key": key }, credentials: "omit", mode: "cors"
    }).then(function (response) {
      return response.text().then(function (text) { // read whole, even a refusal's: the request ends
        if (!response.ok) {
          throw new Error("HTTP " + response.status + (REASONS[response.status] ? ": " + REASONS[response.status] : ""));
        }
        try { return JSON.parse(text); } catch (e) { throw new Error("the answer was not JSON"); }
      });
    }, function () {
      throw new Error("the service could not be reached");
    }).then(function (body) {
      if (!body || body.result !== "ok") { throw new Error("the answer was not a success"); }
      return body.data;
    });
  }

  function cardList(value) { return Array.isArray(value) && value.every(validCard); }

  // One request for up to MAX_IDS cards: a map of id -> card, or a rejection with the reason.
  function load(key, ids) {
    return get("cards?ids=" + encodeURIComponent(ids.join(",")), key).then(function (data) {
      if (!cardList(data)) { throw new Error("the answer was not a list of cards"); }
      var found = Object.create(null);
      data.forEach(function (c) { found[c.id.toLowerCase()] = c; });
      return found;
    });
  }

  // A roster's cards, a page after another (in the roster's order): the list, or a rejection.
  function loadRoster(key, roster) {
    var cards = [];
    function page(offset, n) {
      return get("rosters/" + roster + "/cards?offset=" + offset, key).then(function (data) {
        if (!data || !isCount(data.totalCount) || !cardList(data.items)) {
          throw new Error("the answer was not a page of cards");
        }
        cards = cards.concat(data.items);
        return data.items.length && cards.length < data.totalCount && n < MAX_PAGES ?
          page(offset + data.items.length, n + 1) : cards;
      });
    }
    return page(0, 1);
  }

  // -- Drawing: DOM nodes and text only ----------------------------------------------------------

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  function initials(name) {
    return name.split(/\s+/).filter(Boolean).slice(0, 2).map(function (w) { return w.charAt(0); })
      .join("").toUpperCase();
  }

  function avatar(c) {
    var fallback = el("span", "avatar", initials(c.name));
    fallback.setAttribute("aria-hidden", "true");
    if (!c.avatarUrl) { return fallback; }
    var img = el("img", "avatar");
    img.alt = "Photo of " + c.name;
    img.width = img.height = 56;
    img.loading = "lazy";
    img.decoding = "async";
    img.referrerPolicy = "no-referrer";
    img.addEventListener("error", function () { if (img.parentNode) { img.parentNode.replaceChild(fallback, img); } });
    img.src = c.avatarUrl;
    return img;
  }

  function list(className, label, items, draw) {
    var ul = el("ul", className);
    ul.setAttribute("aria-label", label);
    items.forEach(function (item) { ul.appendChild(draw(item)); });
    return ul;
  }

  function card(c, level, n, compact) {
    var article = el("article", "card");
    var head = el("div", "head");
    var who = el("div");
    var name = el("h" + level, "name");
    name.id = "credits-name-" + n;
    article.setAttribute("aria-labelledby", name.id);
    var place = [c.city, c.country].filter(Boolean).join(", ");
    if (compact) {
      var link = el("a", null, c.name);
      link.href = c.url;
      name.appendChild(link);
    } else {
      name.textContent = c.name;
    }
    who.appendChild(name);
    if (place) { who.appendChild(el("p", "muted", place)); }
    head.appendChild(avatar(c));
    head.appendChild(who);
    article.appendChild(head);
    if (c.topRoles.length) {
      article.appendChild(list("tags", "Top roles", compact ? c.topRoles.slice(0, 2) : c.topRoles,
        function (role) { return el("li", null, role); }));
    }
    var count = el("p", "count");
    count.appendChild(el("strong", null, c.creditCount.toLocaleString("en")));
    count.appendChild(document.createTextNode(c.creditCount === 1 ? " credit" : " credits"));
    article.appendChild(count);
    if (compact) { return article; }
    var sub = "h" + Math.min(level + 1, 6);
    if (c.recentCredits.length) {
      article.appendChild(el(sub, "sub", "Recent credits"));
      article.appendChild(list("rows", "Recent credits", c.recentCredits, function (r) {
        var li = el("li");
        li.appendChild(el("span", "title", r.title));
        var meta = el("span", "meta");
        var when = el("time", null, r.releaseDate.slice(0, 4));
        when.dateTime = r.releaseDate;
        meta.appendChild(document.createTextNode([r.album].concat(r.roles).filter(Boolean).join(" · ") + " · "));
        meta.appendChild(when);
        li.appendChild(meta);
        return li;
      }));
    }
    if (c.charts.length) {
      article.appendChild(el(sub, "sub", "Charts"));
      article.appendChild(list("rows", "Chart positions", c.charts, function (r) {
        var li = el("li");
        li.appendChild(el("span", "title", "No. " + r.position));
        li.appendChild(document.createTextNode(" " + r.chartName));
        return li;
      }));
    }
    var foot = el("p", "foot");
    var more = el("a", null, "See all credits on Credits ID");
    more.href = c.url;
    foot.appendChild(more);
    article.appendChild(foot);
    return article;
  }

  function styles(shadow) {
    if ("adoptedStyleSheets" in shadow && window.CSSStyleSheet && CSSStyleSheet.prototype.replaceSync) {
      if (!sheet) { sheet = new CSSStyleSheet(); sheet.replaceSync(CSS); }
      shadow.adoptedStyleSheets = [sheet];
    } else {
      shadow.appendChild(el("style", null, CSS)); // older browsers; a strict style-src blocks this one
    }
  }

  function render(item, cards) {
    var theme = item.node.getAttribute("data-credits-theme");
    var level = parseInt(item.node.getAttribute("data-credits-heading"), 10);
    if (!(level >= 2 && level <= 6)) { level = 3; }
    var root = el("div", "root" + (theme === "dark" || theme === "light" ? " " + theme : ""));
    root.lang = "en";
    if (item.grid) {
      root.appendChild(list("grid", "Profiles", cards, function (c) {
        var li = el("li");
        li.appendChild(card(c, level, cards.indexOf(c), true));
        return li;
      }));
    } else {
      root.appendChild(card(cards[0], level, 0, false));
    }
    var shadow = item.node.attachShadow({ mode: "open" });
    styles(shadow);
    shadow.appendChild(root);
  }

  // -- Finding the elements, lazily --------------------------------------------------------------

  // What an element asks for: a key and the profile ids (or a roster id), or null (with the one
  // warning). A roster's cards come from its own address and render as a grid.
  function wanted(node) {
    var key = (node.getAttribute("data-credits-key") || "").trim();
    var roster = node.getAttribute("data-credits-roster");
    var one = node.getAttribute("data-credits-profile");
    var raw = one !== null ? one : node.getAttribute("data-credits-profiles") || "";
    var ids = [];
    raw.split(/[\s,]+/).forEach(function (id) {
      id = id.toLowerCase();
      if (id && ids.indexOf(id) < 0) { ids.push(id); }
    });
    if (!/^mpk_[A-Za-z0-9_-]+$/.test(key)) {
      warn(/^m[sw]k_/.test(key) ? "a secret key must never be in a page: use a publishable key (mpk_)"
        : "data-credits-key must be a publishable key (mpk_...)");
      return null;
    }
    if (roster !== null) {
      roster = roster.trim().toLowerCase();
      if (!ID.test(roster)) {
        warn("data-credits-roster must hold a roster id (a UUID)");
        return null;
      }
      return { node: node, key: key, roster: roster, grid: true };
    }
    if (!ids.length || (one !== null && ids.length > 1) || !ids.every(function (id) { return ID.test(id); })) {
      warn("data-credits-profile(s) must hold profile ids (UUIDs)");
      return null;
    }
    return { node: node, key: key, ids: ids, grid: one === null };
  }

  function show(item, loading) {
    loading.then(function (cards) {
      if (cards.length) { render(item, cards); } else { warn("the roster holds no profile"); }
    }).catch(function (error) {
      warn("the card could not be shown: " + (error && error.message));
    });
  }

  function flush() {
    var batch = queue;
    queue = [];
    var byKey = Object.create(null), rosters = Object.create(null);
    batch.forEach(function (item) {
      if (item.roster) { // one load per roster and key, however many elements show it
        var name = item.key + " " + item.roster;
        show(item, rosters[name] = rosters[name] || loadRoster(item.key, item.roster));
      } else {
        (byKey[item.key] = byKey[item.key] || []).push(item);
      }
    });
    Object.keys(byKey).forEach(function (key) {
      var items = byKey[key], ids = [], loads = Object.create(null);
      items.forEach(function (item) {
        item.ids.forEach(function (id) { if (ids.indexOf(id) < 0) { ids.push(id); } });
      });
      for (var i = 0; i < ids.length; i += MAX_IDS) {
        var chunk = ids.slice(i, i + MAX_IDS), loading = load(key, chunk);
        chunk.forEach(function (id) { loads[id] = loading; });
      }
      items.forEach(function (item) {
        Promise.all(item.ids.map(function (id) { return loads[id]; })).then(function (found) {
          var cards = item.ids.map(function (id, n) { return found[n][id]; }).filter(Boolean);
          if (cards.length < item.ids.length) { warn("no profile with the id(s) asked for"); }
          if (cards.length) { render(item, cards); }
        }).catch(function (error) {
          warn("the card could not be shown: " + (error && error.message));
        });
      });
    });
  }

  var observer = new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (!entry.isIntersecting) { return; }
      observer.unobserve(entry.target);
      var item = wanted(entry.target);
      if (item) {
        if (!queue.length) { setTimeout(flush, 0); } // cards that come into view together: one request
        queue.push(item);
      }
    });
  }, { rootMargin: "200px" });

  function watch(node) {
    if (!seen.has(node) && !node.shadowRoot) {
      seen.add(node);
      observer.observe(node);
    }
  }

  function scan(root) {
    if (root.matches && root.matches("[data-credits-key]")) { watch(root); }
    Array.prototype.forEach.call(root.querySelectorAll("[data-credits-key]"), watch);
  }

  function start() {
    scan(document);
    // Pages that add elements later (single-page apps): look at what is added.
    new MutationObserver(function (changes) {
      changes.forEach(function (change) {
        change.addedNodes.forEach(function (node) {
          if (node.nodeType === 1) { scan(node); }
        });
      });
    }).observe(document.documentElement, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
