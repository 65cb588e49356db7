// edgechat widget: one script tag puts a chat button on a site.
//   <script src="https://<service>/widget.js" data-chatbot="<chatbot uuid>" async></script>
// Optional: data-label="Ask us" (the button's text).
// The chat runs in a frame served by the service; the page never sees an API key.
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || !script.src) return;
  var chatbot = script.getAttribute("data-chatbot") || "";
  var base = new URL(script.src, location.href).origin;
  var label = script.getAttribute("data-label") || "Chat with us";
  var frameId = "edgechat-frame-" + chatbot;
  var frame = null;
  // Where the chat keeps its visitor for this tab when the browser keeps the frame, which
  // is on another site, from storage of its own.
  var kept = "edgechat:visitor:" + chatbot;
  function keptVisitor() {
    try { return sessionStorage.getItem(kept) || ""; } catch (e) { return ""; }
  }

  var button = document.createElement("button");
  button.type = "button";
  button.textContent = label;
  button.setAttribute("aria-expanded", "false");
  button.setAttribute("aria-controls", frameId);
  button.className = "edgechat-button";
  var b = button.style;
  b.position = "fixed"; b.right = "1rem"; b.bottom = "1rem"; b.zIndex = "2147483000";
  b.padding = "0.75rem 1.1rem"; b.border = "0"; b.borderRadius = "999px";
  b.background = "#0b57d0"; b.color = "#fff"; b.font = "600 1rem system-ui, sans-serif";
  b.boxShadow = "0 2px 8px rgba(0,0,0,.25)"; b.cursor = "pointer";

  // Filling a small screen, the chat is all there is to use: the rest of the page is made
  // inert behind it, so the keyboard cannot wander onto what the visitor cannot see.
  var inerted = [];
  function keepFocusIn(on) {
    inerted.forEach(function (node) { node.inert = false; });
    inerted = [];
    if (!on) return;
    Array.prototype.forEach.call(document.body.children, function (node) {
      if (node !== frame && !node.inert) { node.inert = true; inerted.push(node); }
    });
  }

  function place() {
    if (!frame) return;
    var f = frame.style;
    var small = window.innerWidth < 560;
    keepFocusIn(small && !frame.hidden);
    f.position = "fixed"; f.zIndex = "2147483001"; f.border = "0"; f.background = "#fff";
    f.boxShadow = "0 4px 24px rgba(0,0,0,.3)";
    f.right = small ? "0" : "1rem"; f.bottom = small ? "0" : "4.5rem";
    f.width = small ? "100%" : "380px"; f.height = small ? "100%" : "min(560px, calc(100vh - 6rem))";
    f.borderRadius = small ? "0" : "0.75rem";
  }

  function open() {
    if (!frame) {
      frame = document.createElement("iframe");
      frame.id = frameId;
      frame.title = "Chat";
      var visitor = keptVisitor();
      frame.src = base + "/widget?chatbot=" + encodeURIComponent(chatbot) + "&embed=script" +
        (visitor ? "#" + encodeURIComponent(visitor) : "");
      document.body.appendChild(frame);
      place();
    }
    frame.hidden = false;
    frame.style.display = "block";
    place();
    button.setAttribute("aria-expanded", "true");
    frame.focus();
  }

  function close() {
    if (!frame) return;
    frame.style.display = "none";
    frame.hidden = true;
    keepFocusIn(false);
    button.setAttribute("aria-expanded", "false");
    button.focus();
  }

  button.addEventListener("click", function () {
    if (button.getAttribute("aria-expanded") === "true") close(); else open();
  });
  window.addEventListener("message", function (event) {
    if (event.origin !== base || !frame || event.source !== frame.contentWindow) return;
    if (!event.data) return;
    if (event.data.edgechat === "close") close();
    if (event.data.edgechat === "visitor" && event.data.chatbot === chatbot) {
      try { sessionStorage.setItem(kept, JSON.stringify(event.data.visitor)); } catch (e) { /* this page load only */ }
    }
  });
  window.addEventListener("resize", place);

  function mount() { document.body.appendChild(button); }
  if (document.body) mount(); else document.addEventListener("DOMContentLoaded", mount);
})();
