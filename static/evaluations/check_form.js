// The admin's check form: show the chosen kind's params table (rendered for every kind by the
// KindSelect widget) and the custom check's own fields only when the kind is "custom".
(function () {
  function update() {
    var select = document.getElementById("id_kind");
    if (!select) return;
    var kind = select.value;
    document.querySelectorAll(".kind-param-table").forEach(function (table) {
      table.hidden = table.dataset.kind !== kind;
    });
    document.querySelectorAll("fieldset.custom-check").forEach(function (fieldset) {
      fieldset.hidden = kind !== "custom";
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    var select = document.getElementById("id_kind");
    if (select) select.addEventListener("change", update);
    update();
  });
})();
