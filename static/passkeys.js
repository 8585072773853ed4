// Passkeys (WebAuthn) for the sign-in, second-step and account pages. Loaded as a file: the
// Content-Security-Policy allows no inline script. A form marked data-webauthn="create" or "get"
// carries the server's options (JSON, in data-options); its button asks the browser for a passkey,
// puts the answer in the form's hidden "credential" field and sends the form.
(function () {
  "use strict";

  function toBytes(b64url) {
    var b64 = b64url.replace(/-/g, "+").replace(/_/g, "/");
    while (b64.length % 4) { b64 += "="; }
    var raw = atob(b64), bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) { bytes[i] = raw.charCodeAt(i); }
    return bytes.buffer;
  }

  function toB64url(buffer) {
    var bytes = new Uint8Array(buffer), raw = "";
    for (var i = 0; i < bytes.length; i++) { raw += String.fromCharCode(bytes[i]); }
    return btoa(raw).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function creationOptions(o) {
    o.challenge = toBytes(o.challenge);
    o.user.id = toBytes(o.user.id);
    (o.excludeCredentials || []).forEach(function (c) { c.id = toBytes(c.id); });
    return o;
  }

  function requestOptions(o) {
    o.challenge = toBytes(o.challenge);
    (o.allowCredentials || []).forEach(function (c) { c.id = toBytes(c.id); });
    return o;
  }

  function serialize(credential) {
    var r = credential.response, out = {
      id: credential.id, rawId: toB64url(credential.rawId), type: credential.type,
      clientExtensionResults: credential.getClientExtensionResults ? credential.getClientExtensionResults() : {},
      response: { clientDataJSON: toB64url(r.clientDataJSON) }
    };
    if (credential.authenticatorAttachment) { out.authenticatorAttachment = credential.authenticatorAttachment; }
    if (r.attestationObject) {
      out.response.attestationObject = toB64url(r.attestationObject);
      if (r.getTransports) { out.response.transports = r.getTransports(); }
    } else {
      out.response.authenticatorData = toB64url(r.authenticatorData);
      out.response.signature = toB64url(r.signature);
      if (r.userHandle) { out.response.userHandle = toB64url(r.userHandle); }
    }
    return JSON.stringify(out);
  }

  function say(form, text) {
    var status = form.querySelector("[data-webauthn-status]");
    if (status) { status.textContent = text; }
  }

  function run(form) {
    var options = JSON.parse(form.getAttribute("data-options"));
    var creating = form.getAttribute("data-webauthn") === "create";
    var ask = creating
      ? navigator.credentials.create({ publicKey: creationOptions(options) })
      : navigator.credentials.get({ publicKey: requestOptions(options) });
    say(form, "Waiting for your passkey…");
    ask.then(function (credential) {
      form.querySelector("input[name=credential]").value = serialize(credential);
      form.submit();
    }, function (error) {
      say(form, (error && error.name === "NotAllowedError")
        ? "No passkey was used (cancelled, or it timed out). Try again."
        : "Your browser could not use a passkey here: " + (error && error.message ? error.message : error));
    });
  }

  // The login page: this site's passkeys offered in the email field's autofill (conditional
  // mediation), where the browser can. The options (with a fresh challenge, kept server-side) are
  // fetched first; a passkey picked from the list sends the hidden form. Nothing is shown, and
  // nothing is said, where the browser cannot: the password and the passkey button stay.
  function autofill(form) {
    var token = form.querySelector("input[name=csrf_token]").value;
    fetch(form.getAttribute("data-options-url"), {
      method: "POST", credentials: "same-origin", headers: { "X-CSRFToken": token }
    }).then(function (response) {
      if (!response.ok) { throw new Error("no options"); }
      return response.json();
    }).then(function (options) {
      return navigator.credentials.get({ publicKey: requestOptions(options), mediation: "conditional" });
    }).then(function (credential) {
      if (!credential) { return; }
      form.querySelector("input[name=credential]").value = serialize(credential);
      form.submit();
    }, function () { /* cancelled, or not offered: the rest of the page is unchanged */ });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var supported = !!(window.PublicKeyCredential && navigator.credentials);
    var conditional = document.querySelector("form[data-webauthn=conditional]");
    if (conditional && supported && PublicKeyCredential.isConditionalMediationAvailable) {
      PublicKeyCredential.isConditionalMediationAvailable().then(function (available) {
        if (available) { autofill(conditional); }
      });
    }
    document.querySelectorAll("form[data-webauthn=get], form[data-webauthn=create]").forEach(function (form) {
      var button = form.querySelector("button[data-webauthn-start]");
      if (!supported) {
        say(form, "This browser cannot use passkeys.");
        if (button) { button.disabled = true; }
        return;
      }
      if (button) {
        button.addEventListener("click", function (event) { event.preventDefault(); run(form); });
      }
    });
  });
}());
