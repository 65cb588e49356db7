#!/usr/bin/env python3
"""Typesets plain-text documents as PDFs for the knowledge benchmark (needs fpdf2).

Reads {"out": folder, "docs": [{"name", "title", "text"}]} as JSON on stdin, writes
folder/name for each document not already there (names carry a hash of the text, so the
folder works as a cache), removes other PDFs from the folder, and prints the paths.
"""
import json
import os
import sys

from fpdf import FPDF

# The core fonts cover Latin-1 only; the common typographic characters get ASCII stand-ins.
REPLACEMENTS = {
    "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-",
    "\u2010": "-", "\u2026": "...", "\u2022": "*", "\u00a0": " ", "\u2212": "-",
}


def latin1(text):
    for a, b in REPLACEMENTS.items():
        text = text.replace(a, b)
    return text.encode("latin-1", "replace").decode("latin-1")


def typeset(title, text, path):
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(True, margin=15)
    pdf.set_title(latin1(title))
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 14)
    pdf.multi_cell(0, 8, latin1(title), new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)
    pdf.set_font("Helvetica", size=10)
    for para in text.split("\n\n"):
        para = " ".join(para.split())
        if para:
            pdf.multi_cell(0, 5, latin1(para), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
    tmp = path + ".part"
    pdf.output(tmp)
    os.replace(tmp, path)


def main():
    job = json.load(sys.stdin)
    os.makedirs(job["out"], exist_ok=True)
    written = []
    for doc in job["docs"]:
        path = os.path.join(job["out"], doc["name"])
        if not os.path.exists(path):
            typeset(doc["title"], doc["text"], path)
        written.append(path)
    for name in os.listdir(job["out"]):
        path = os.path.join(job["out"], name)
        if path not in written and (name.endswith(".pdf") or name.endswith(".part")):
            os.remove(path)
    print(json.dumps(written))


if __name__ == "__main__":
    main()
