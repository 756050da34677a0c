"""The docs of this installation (`docs/*.md`) as admin pages: what the case and check forms
link to, each help link at the section that defines its field (`doc_link`), true for the
version that is running and with no network access needed.

Markdown is rendered by Python-Markdown: tables, fenced code, and heading anchors from its `toc`
extension, made GitHub's way ("The case" is `#the-case`), so the docs' own links work here too.
Raw HTML is never passed through: the docs are ours, but a page of the admin shows nothing it
did not build, so `<b>` in a doc is shown as text. A link to another doc (`cases.md#formats`)
opens that doc's page; a link to anything but a doc, a section, or an http(s) or mailto address
is shown as its text.
"""

import re
from functools import lru_cache

import markdown
from django.conf import settings
from django.http import Http404
from django.template.response import TemplateResponse
from django.urls import reverse, reverse_lazy
from django.utils.safestring import mark_safe
from django.utils.text import format_lazy
from markdown.extensions import Extension
from markdown.extensions.toc import slugify
from markdown.treeprocessors import Treeprocessor

DOC_LINK = re.compile(r"(?P<name>[a-z0-9_-]+)\.md(?P<fragment>#[\w.-]*)?$")
SAFE_LINK = re.compile(r"(https?:|mailto:|#)", re.IGNORECASE)


def docs_dir():
    return settings.BASE_DIR / "docs"


def served_docs():
    """The names of the docs there are (`checks` for docs/checks.md), sorted."""
    return sorted(path.stem for path in docs_dir().glob("*.md"))


def anchor(heading):
    """The id of a heading on a doc's page, as the `toc` extension makes it from the heading's
    text (without the backticks of code)."""
    return slugify(heading, "-")


def doc_url(doc, heading=""):
    """The path of the served page of docs/<doc>.md, at the anchor of ``heading`` if given:
    what a page, a message or an API answer links to instead of naming a file."""
    url = reverse("admin:evaluations_check_docs", args=[doc])
    return f"{url}#{anchor(heading)}" if heading else url


def doc_link(text, heading, doc="checks", key=None):
    """Help text ending with a link to the section `heading` of docs/<doc>.md, the one that
    defines the field's format; `key` names the field's entry in that section (`"input"` in
    "The case"). The admin shows help text as HTML: `text` must be free of markup."""
    what = f'Format of "{key}": ' if key else "Format: "
    return format_lazy(
        '{} <a href="{}#{}" target="_blank">{}docs/{}.md, "{}"</a>',
        text,
        reverse_lazy("admin:evaluations_check_docs", args=[doc]),
        anchor(heading),
        what,
        doc,
        heading,
    )


class _NoRawHtml(Extension):
    """Raw HTML, as a block or inline, is text: Python-Markdown passes it through otherwise."""

    def extendMarkdown(self, md):
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")


class _Links(Treeprocessor):
    """A link to a doc opens its page here; one to anything but a doc, a section or an
    http(s) or mailto address, and any image, keep only their text."""

    def __init__(self, md, names):
        super().__init__(md)
        self.names = names

    def run(self, root):
        for parent in root.iter():
            for element in list(parent):
                if element.tag == "img":
                    element.tag, element.text = "span", element.get("alt", "")
                    element.attrib.clear()
                if element.tag != "a":
                    continue
                href = element.get("href", "")
                doc = DOC_LINK.match(href)
                if doc and doc["name"] in self.names:
                    url = reverse("admin:evaluations_check_docs", args=[doc["name"]])
                    element.set("href", url + (doc["fragment"] or ""))
                elif not SAFE_LINK.match(href):
                    element.tag = "span"
                    element.attrib.clear()


class _LinksExtension(Extension):
    def __init__(self, names):
        super().__init__()
        self.names = names

    def extendMarkdown(self, md):
        md.treeprocessors.register(_Links(md, self.names), "sherlock_links", 0)


@lru_cache(maxsize=16)
def _render(path, modified):
    text = path.read_text(encoding="utf-8")
    md = markdown.Markdown(
        extensions=[
            "tables",
            "fenced_code",
            "toc",
            _NoRawHtml(),
            _LinksExtension(served_docs()),
        ],
        extension_configs={"toc": {"permalink": True}},
    )
    html = md.convert(text)
    return html, md.toc_tokens  # type: ignore[attr-defined]  # set by the toc extension


def _sections(tokens):
    """The `toc` tokens as the page lists them: each heading's id, its title (HTML the
    extension escaped: safe) and the headings under it."""
    return [
        {
            "id": token["id"],
            "title": mark_safe(token["name"]),
            "children": _sections(token["children"]),
        }
        for token in tokens
    ]


def render_doc(name):
    """(HTML, the `toc` extension's tokens of its headings) of docs/<name>.md, rendered again
    when the file changes. Http404 for a name that is not a doc."""
    if name not in served_docs():
        raise Http404("No such document.")
    path = docs_dir() / f"{name}.md"
    return _render(path, path.stat().st_mtime_ns)


def docs_view(modeladmin, request, name):
    """The page of docs/<name>.md: its sections listed, then the doc."""
    html, toc = render_doc(name)
    return TemplateResponse(
        request,
        "admin/evaluations/doc.html",
        {
            **modeladmin.admin_site.each_context(request),
            "opts": modeladmin.model._meta,
            "title": f"docs/{name}.md",
            "name": name,
            "docs": served_docs(),
            # Built by Python-Markdown from our file, raw HTML refused (_NoRawHtml): safe.
            "doc": mark_safe(html),
            "sections": _sections(toc[0]["children"] if len(toc) == 1 else toc),
        },
    )
