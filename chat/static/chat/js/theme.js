// The theme chosen in the chat (light or dark), applied before the page paints; none: the
// system's. A classic script, not a module, so it runs at once in <head>.
(function () {
  try {
    var theme = localStorage.getItem("agno-site.theme");
    if (theme === "light" || theme === "dark") document.documentElement.dataset.theme = theme;
  } catch (error) {
    // storage refused (a private window's policy): the system's theme
  }
})();
