'use strict';
// Sherlock's pickers (sherlock/core/pickers.py): select2 on every select.sherlock-picker, filled
// from its data-ajax--url as the person types. A picker that depends on other fields of its
// form (data-depends="agent") sends their values as filters and is cleared when they change;
// a filter's picker (data-submit) sends its form when a row is chosen or the choice cleared;
// data-none is what it says when nothing is found (what to do, where that may be said);
// data-first what it says, asking nothing, while a field it depends on is empty.
// Pickers in content htmx swaps in are started too; before htmx keeps a page for the back
// button, they are put back to plain selects so the restored page starts them again.
{
    const $ = django.jQuery;

    function field(element, name) {
        return element.form && element.form.elements[name];
    }

    function start(root) {
        $(root).find('select.sherlock-picker').addBack('select.sherlock-picker')
            .not('.select2-hidden-accessible').each(function(i, element) {
                const depends = (element.dataset.depends || '').split(',').filter(Boolean);
                const none = element.dataset.none;
                const first = element.dataset.first;
                const missing = () => depends.some((name) => !(field(element, name) || {}).value);
                $(element).select2({
                    language: (none || first) ? {
                        noResults: () => (first && missing()) ? first : (none || 'No results found')
                    } : undefined,
                    ajax: {
                        transport: (params, success, failure) => {
                            if (first && missing()) {
                                success({results: []});
                                return {abort: () => {}};
                            }
                            const request = $.ajax(params);
                            request.then(success);
                            request.fail(failure);
                            return request;
                        },
                        data: (params) => {
                            const data = {term: params.term, page: params.page};
                            depends.forEach((name) => {
                                const other = field(element, name);
                                if (other && other.value) { data[name] = other.value; }
                            });
                            return data;
                        }
                    }
                });
                if (element.dataset.submit && element.form) {
                    $(element).on('select2:select select2:clear', () => element.form.requestSubmit());
                    // A cleared filter is not sent (the admin reads an empty one as an error).
                    element.form.addEventListener('formdata', (event) => {
                        if (!element.value) { event.formData.delete(element.name); }
                    });
                }
                depends.forEach((name) => {
                    const other = field(element, name);
                    if (other) {
                        $(other).on('change', () => { $(element).val(null).trigger('change'); });
                    }
                });
            });
    }

    $(() => start(document));
    document.addEventListener('htmx:load', (event) => start(event.detail.elt));
    document.addEventListener('htmx:beforeHistorySave', () => {
        $('select.sherlock-picker.select2-hidden-accessible').select2('destroy');
    });
    // The snapshot taken, the pickers outside what was swapped start again; so do those of a
    // page htmx restores from its history.
    document.addEventListener('htmx:afterSettle', () => start(document));
    document.addEventListener('htmx:historyRestore', () => start(document));
}
