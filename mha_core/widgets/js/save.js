/* Every figure the course draws can be saved, as PNG or as SVG, with no network: two buttons under
   the plot, outside its image (plotly's mode bar stays hidden: it sat over titles, and buttons cannot
   sit inside an element that is one image for a screen reader). A click hands the drawn figure to
   plotly.js's own Plotly.downloadImage, which makes the file in the page.

   Used by a LiveFigure's view in JupyterLab (live_figure.js) and by every figure of the handouts
   (tools/handout_assets/figures.js, which the handout build ships this file beside). A classic
   script like label.js: it defines mhaSave; under node (the unit tests) it is module.exports.
*/
/* exported mhaSave */
var mhaSave = (function () {
  "use strict";

  var FORMATS = ["png", "svg"];
  // PNG at twice the drawn size: sharp on a slide or in print. SVG is drawn at its size (it scales).
  var PNG_SCALE = 2;

  // The figure's title as plain text: its <br>s as spaces, other tags dropped.
  function titleText(layout) {
    var title = layout && layout.title;
    var text = typeof title === "string" ? title : (title && title.text) || "";
    return String(text).replace(/<br\s*\/?>/gi, " ").replace(/<[^>]+>/g, "").replace(/\s+/g, " ").trim();
  }

  // A file name from a figure's name: lower-case letters, digits and dashes, at most 60 characters,
  // "figure" when nothing is left (plotly adds the extension).
  function fileName(name) {
    var base = String(name || "").normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase()
      .replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 60).replace(/-+$/, "");
    return base || "figure";
  }

  // What Plotly.downloadImage is given for ``format``: the figure at the size it is drawn now
  // (a handout's figure takes the page's width), named after the figure.
  function imageOptions(format, size, name) {
    if (FORMATS.indexOf(format) < 0) {
      throw new Error("format=" + JSON.stringify(format) + " cannot be saved; valid formats are " + FORMATS.join(", "));
    }
    var options = {format: format, filename: fileName(name)};
    if (size && size.width > 0 && size.height > 0) {
      options.width = Math.round(size.width);
      options.height = Math.round(size.height);
    }
    options.scale = format === "png" ? PNG_SCALE : 1;
    return options;
  }

  // The drawn size of a plotly div: plotly's own record of the layout it drew, else the element's box.
  function drawnSize(plot) {
    var full = plot._fullLayout;
    if (full && full.width > 0 && full.height > 0) return {width: full.width, height: full.height};
    return {width: plot.clientWidth, height: plot.clientHeight};
  }

  // The figure's name for its file: the image's name for a screen reader, else its title.
  function nameOf(plot) {
    return plot.getAttribute("aria-label") || titleText(plot.layout);
  }

  // Save the figure drawn in ``plot``; ``plotly`` is plotly.js. A promise of plotly's answer.
  function save(plotly, plot, format) {
    return plotly.downloadImage(plot, imageOptions(format, drawnSize(plot), nameOf(plot)));
  }

  // The row of buttons, put in ``box`` before ``before`` (at its end without one); ``getPlotly`` gives
  // plotly.js (or a promise of it) when a button is pressed. A second call on the same box adds nothing.
  function addButtons(box, plot, getPlotly, before) {
    var found = box.querySelector(":scope > .mha-save");
    if (found) return found;
    var doc = box.ownerDocument;
    var row = doc.createElement("div");
    row.className = "mha-save";
    row.setAttribute("role", "group");
    row.setAttribute("aria-label", "Save this figure");
    FORMATS.forEach(function (format) {
      var button = doc.createElement("button");
      button.type = "button";
      button.className = "mha-save-button";
      button.setAttribute("data-format", format);
      button.textContent = "Save as " + format.toUpperCase();
      button.addEventListener("click", function () {
        Promise.resolve(getPlotly()).then(function (plotly) { return save(plotly, plot, format); })
          .catch(function (error) { row.setAttribute("data-mha-error", String(error)); });
      });
      row.appendChild(button);
    });
    box.insertBefore(row, before || null);
    return row;
  }

  return {FORMATS: FORMATS, PNG_SCALE: PNG_SCALE, titleText: titleText, fileName: fileName,
          imageOptions: imageOptions, drawnSize: drawnSize, nameOf: nameOf, save: save, addButtons: addButtons};
})();
if (typeof module === "object" && module.exports) module.exports = mhaSave;
