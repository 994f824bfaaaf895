/* The review page: counts on the bulk buttons, a confirmation before any bulk decision, and keys.
 * Every count is read from the boxes ticked now (never from what a Back button restored, which the
 * server refuses anyway: a decision carries the page's version). */
(function () {
  "use strict";
  var form = document.getElementById("bulk-form");
  var root = document.getElementById("review");
  if (!root) return;
  var number = root.dataset.number;

  function boxes() { return Array.prototype.slice.call(document.querySelectorAll("input[name=commit][form=bulk-form]")); }
  function ticked() { return boxes().filter(function (b) { return b.checked; }); }
  function plural(n) { return n + " commit" + (n === 1 ? "" : "s"); }
  function setCount(button, n) { var span = button && button.querySelector(".count"); if (span) span.textContent = n; }

  function counts() {
    var chosen = ticked();
    var lossyTicked = chosen.filter(function (b) { return b.dataset.lossy === "1"; }).length;
    var all = document.getElementById("approve");
    return {
      all: all ? Number(all.dataset.base) + lossyTicked : 0,
      selected: chosen.length,
      rest: Number((form && form.elements.count && form.elements.count.value) || 0),
    };
  }
  function update() {
    var n = counts();
    setCount(document.getElementById("approve"), n.all);
    setCount(document.getElementById("approve-selected"), n.selected);
    setCount(document.getElementById("reject-selected"), n.selected);
  }
  if (form) {
    // A page the browser restored (Back) shows boxes as they are now, counted afresh.
    window.addEventListener("pageshow", update);
    boxes().forEach(function (b) { b.addEventListener("change", update); });
    update();
    form.addEventListener("submit", function (event) {
      var button = event.submitter;
      if (!button || button.name !== "action") return;
      var n = counts(), reason = (form.elements.reason.value || "").trim();
      var says = {
        "approve-all": [n.all, "Merge " + plural(n.all) + " of review #" + number + " into main?"],
        "approve-selected": [n.selected, "Merge the " + plural(n.selected) + " selected of review #" + number + " into main?"],
        "reject-selected": [n.selected, "Reject the " + plural(n.selected) + " selected of review #" + number + "?"],
        "reject-rest": [n.rest, "Reject the other " + plural(n.rest) + " of review #" + number + "?"],
      }[button.value];
      if (!says) return;
      if (button.value.indexOf("reject") === 0 && !reason) {
        event.preventDefault();
        form.elements.reason.focus();
        form.elements.reason.setCustomValidity("Say why you reject them, so the author knows what to change.");
        form.elements.reason.reportValidity();
        return;
      }
      if (says[0] < 1 || !window.confirm(says[1])) { event.preventDefault(); return; }
      form.elements.confirmed.value = "1";
    });
    form.elements.reason.addEventListener("input", function () { form.elements.reason.setCustomValidity(""); });
  }

  // --- keys: n next undecided, j/k next/previous commit, a approve, s skip, x tick ------------------
  function sections() { return Array.prototype.slice.call(document.querySelectorAll("section.commit")); }
  function current() {
    var el = document.activeElement;
    while (el && !(el.classList && el.classList.contains("commit"))) el = el.parentElement;
    if (el) return el;
    var hash = window.location.hash.slice(1);
    return hash ? document.getElementById(hash) : null;
  }
  function focusCommit(section) {
    if (!section) return;
    var approve = section.querySelector(".approve-one");
    section.scrollIntoView({ block: "start" });
    (approve || section).focus({ preventScroll: true });
    history.replaceState(null, "", "#" + section.id);
  }
  // Arriving at a commit (next undecided, a link, after a decision): focus its Approve button.
  // After the load (or a link within the page), so the browser's own move to the fragment does
  // not take the focus back.
  function arrive() {
    if (window.location.hash.indexOf("#commit-") === 0) {
      requestAnimationFrame(function () { focusCommit(document.getElementById(window.location.hash.slice(1))); });
    }
  }
  window.addEventListener("load", arrive);
  window.addEventListener("hashchange", arrive);
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "textarea" || tag === "input" && event.target.type !== "checkbox" || tag === "select") return;
    var all = sections(), here = current(), at = here ? all.indexOf(here) : -1;
    if (event.key === "n") {
      var link = document.getElementById("next-undecided");
      if (link && link.href) {
        var open = all.slice(at + 1).concat(all.slice(0, at + 1)).filter(function (s) { return s.classList.contains("open"); })[0];
        if (open && open.querySelector(".approve-one")) focusCommit(open); else window.location.href = link.href;
      }
    } else if (event.key === "j") {
      focusCommit(all[Math.min(all.length - 1, at + 1)]);
    } else if (event.key === "k") {
      focusCommit(all[Math.max(0, at - 1)]);
    } else if (event.key === "a" || event.key === "s") {
      var button = here && here.querySelector(event.key === "a" ? ".approve-one" : ".skip-one");
      if (button) button.click(); else return;
    } else if (event.key === "x") {
      var box = here && here.querySelector("input[name=commit]");
      if (!box) return;
      box.checked = !box.checked;
      update();
    } else {
      return;
    }
    event.preventDefault();
  });
})();
