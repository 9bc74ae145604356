// The web app's one script, and the pages work without it. It does two things:
// - it tells the server the browser's time zone (the `tz` cookie), so pages write
//   times in it; a page drawn before the server knew is drawn once more;
// - it refreshes the parts of a page marked `data-refresh="<seconds>"`, asking the
//   server for that part alone (`X-Refresh: <id>`), and leaves a part alone while the
//   focus is in it or the page is hidden.
(function () {
  "use strict";

  var zone = "";
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  } catch (error) {
    zone = "";
  }
  var wanted = "tz=" + encodeURIComponent(zone);
  var known = document.cookie.split("; ").indexOf(wanted) >= 0;
  if (zone && !known) {
    document.cookie = wanted + "; path=/; max-age=31536000; samesite=lax";
    if (document.querySelector("time")) {
      location.reload();
      return;
    }
  }

  // A part holding the focus is left alone: redrawing it would throw the keyboard
  // user's place away.
  function busy(region) {
    var active = document.activeElement;
    return active && active !== document.body && region.contains(active);
  }

  var last = {};

  function refresh(region) {
    if (document.hidden || busy(region)) {
      return;
    }
    fetch(location.href, {
      headers: { "X-Refresh": region.id },
      credentials: "same-origin",
      redirect: "manual",
    }).then(function (response) {
      var type = response.headers.get("content-type") || "";
      return response.ok && type.indexOf("text/html") === 0 ? response.text() : null;
    }).then(function (html) {
      if (html !== null && html !== last[region.id] && !busy(region)) {
        last[region.id] = html;
        region.innerHTML = html;
      }
    }).catch(function () {
      // Offline or the server restarting: the next tick tries again.
    });
  }

  var regions = document.querySelectorAll("[data-refresh][id]");
  Array.prototype.forEach.call(regions, function (region) {
    var seconds = Math.max(5, Number(region.getAttribute("data-refresh")) || 15);
    setInterval(function () { refresh(region); }, seconds * 1000);
  });
})();
