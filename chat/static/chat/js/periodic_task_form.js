// django-celery-beat's periodic-task form (templates/admin/djcelery/change_periodictask_form.html):
// its inline script, here because the Content Security Policy refuses inline code. The crontab
// field's help says in words when the chosen crontab fires; the read-only translation row, which
// says the same for the saved one, is hidden.
(() => {
  const data = document.getElementById("readable-crontabs");
  const field = document.querySelector(".field-crontab");
  const select = document.getElementById("id_crontab");
  if (!data || !field || !select) return;
  const readable = JSON.parse(data.textContent);
  const help = field.querySelector(".help");
  const original = help ? help.textContent.trim() : "";
  for (const row of document.querySelectorAll(".field-crontab_translation")) row.style.display = "none";

  const show = () => {
    if (!help) return;
    const reading = readable[select.value];
    help.replaceChildren(original, ...(reading ? [document.createElement("br"), `Translation: ${reading}`] : []));
  };
  field.addEventListener("change", show);
  show();
})();
