// The agent version form: show the settings of the chosen adapter, hide the others'
// (agents/admin.py, AgentVersionAdmin.get_fieldsets). Without JavaScript every adapter's
// settings stay visible and only the chosen adapter's are used.
"use strict";
(function () {
  function show() {
    const adapter = document.getElementById("id_adapter");
    if (!adapter) return;
    for (const fieldset of document.querySelectorAll("fieldset.adapter-settings")) {
      fieldset.hidden = !fieldset.classList.contains("adapter-" + adapter.value);
    }
  }
  document.addEventListener("DOMContentLoaded", function () {
    show();
    const adapter = document.getElementById("id_adapter");
    if (adapter) adapter.addEventListener("change", show);
  });
})();
