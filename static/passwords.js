// Password fields: a "Show" button that reveals what was typed, and, under a new password, a
// strength hint as it is typed - the server's own estimator (POST /password/strength, the rule
// the form applies), asked a moment after the typing stops. Loaded as a file: the
// Content-Security-Policy allows no inline script. Without JavaScript the buttons stay hidden
// and the form's rule still answers on submit.
(function () {
  "use strict";

  function reveal(button) {
    var input = document.getElementById(button.getAttribute("data-reveal"));
    if (!input) { return; }
    var word = button.querySelector(".reveal-word");
    button.hidden = false;
    button.addEventListener("click", function () {
      var shown = input.type === "password";
      input.type = shown ? "text" : "password";
      word.textContent = shown ? "Hide" : "Show";  // its name: "Hide password" / "Show password"
      button.setAttribute("aria-pressed", shown ? "true" : "false");
    });
  }

  function strength(input) {
    var hint = document.getElementById(input.id + "-strength");
    var form = input.form;
    var token = form && form.querySelector("input[name=csrf_token]");
    if (!hint || !token || !window.fetch) { return; }
    var meter = hint.querySelector("meter"), words = hint.querySelector(".strength-words");
    var timer = null, asked = 0;

    function show(answer) {
      hint.hidden = false;
      meter.value = answer.score;
      hint.className = "strength small " + (answer.acceptable ? "strength-ok" : "strength-weak");
      words.textContent = answer.acceptable
        ? "Strength: " + answer.label.toLowerCase() + "."
        : "Strength: " + answer.label.toLowerCase() + ". " + answer.reason;
    }

    function ask() {
      var value = input.value, mine = ++asked;
      if (!value) { hint.hidden = true; return; }
      var body = new URLSearchParams();
      body.set("password", value);
      body.set("words", input.getAttribute("data-words") || "");
      body.set("csrf_token", token.value);
      fetch(input.getAttribute("data-strength"), {
        method: "POST", body: body, credentials: "same-origin", headers: { "X-CSRFToken": token.value }
      }).then(function (response) {
        return response.ok ? response.json() : null;
      }).then(function (answer) {
        if (answer && mine === asked) { show(answer); }
      }, function () { /* no hint: the form's rule still answers on submit */ });
    }

    input.addEventListener("input", function () {
      if (timer) { clearTimeout(timer); }
      timer = setTimeout(ask, 250);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("button[data-reveal]"), reveal);
    Array.prototype.forEach.call(document.querySelectorAll("input[data-strength]"), strength);
  });
}());
