/* Every figure the course draws can be saved, as PNG or as SVG, with no network: two buttons under
   the plot, outside its image (plotly's mode bar stays hidden: it sat over titles, and buttons cannot
   sit inside an element that is one image for a screen reader). A click hands the drawn figure to
   plotly.js's own Plotly.downloadImage, which makes the file in the page.

   Where the page's plotly.js cannot be reached (JupyterLab draws a static figure with its own copy,
   inside its renderer), the file is made from the drawing itself: plotly's SVG layers joined in one
   SVG, and for PNG that SVG drawn on a canvas at twice its size (saveDrawn).

   Used by a LiveFigure's view in JupyterLab (live_figure.js), by a static figure there
   (static_words.js) and by every figure of the handouts (tools/handout_assets/figures.js, which the
   handout build ships this file beside). A classic script like label.js: it defines mhaSave; under
   node (the unit tests) it is module.exports.
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

  // The drawing as one SVG file: plotly's layers (svg.main-svg, each drawn at 0, 0) nested in one <svg> of
  // the drawn size, the page's address dropped from internal references (plotly writes url("<page>#id")
  // for gradients and clip paths, which a file must read as url("#id")).
  function svgText(plot) {
    var size = drawnSize(plot), w = Math.round(size.width), h = Math.round(size.height);
    var view = plot.ownerDocument && plot.ownerDocument.defaultView;
    var serializer = view && view.XMLSerializer ? new view.XMLSerializer() : null;
    var layers = Array.prototype.map.call(plot.querySelectorAll("svg.main-svg"), function (svg) {
      return serializer ? serializer.serializeToString(svg) : svg.outerHTML;
    });
    var text = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="' + w +
      '" height="' + h + '" viewBox="0 0 ' + w + " " + h + '">' + layers.join("") + "</svg>";
    return text.replace(/url\((&quot;|["']?)[^"'#)&]*#/g, "url($1#");
  }

  // A file the browser saves: a link to ``blob`` named ``filename``, clicked, then let go.
  function download(doc, blob, filename) {
    var view = doc.defaultView, url = view.URL.createObjectURL(blob), link = doc.createElement("a");
    link.href = url;
    link.download = filename;
    link.style.display = "none";
    doc.body.appendChild(link);
    link.click();
    link.remove();
    view.setTimeout(function () { view.URL.revokeObjectURL(url); }, 10000);
  }

  // ``svg`` drawn on a canvas of ``scale`` times its size: a promise of the PNG.
  function pngOf(doc, svg, options) {
    var view = doc.defaultView;
    return new Promise(function (resolve, reject) {
      var image = new view.Image();
      image.onload = function () {
        var canvas = doc.createElement("canvas");
        canvas.width = options.width * options.scale;
        canvas.height = options.height * options.scale;
        canvas.getContext("2d").drawImage(image, 0, 0, canvas.width, canvas.height);
        canvas.toBlob(function (blob) { if (blob) resolve(blob); else reject(new Error("the canvas made no PNG")); }, "image/png");
      };
      image.onerror = function () { reject(new Error("the drawing could not be read as an image")); };
      image.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svg);
    });
  }

  // Save the figure drawn in ``plot`` from its drawing alone (no plotly.js): a promise of the file's name.
  function saveDrawn(plot, format) {
    var doc = plot.ownerDocument, view = doc.defaultView;
    var options = imageOptions(format, drawnSize(plot), nameOf(plot));
    if (!options.width) return Promise.reject(new Error("the figure is not drawn yet"));
    var svg = svgText(plot);
    var filename = options.filename + "." + format;
    var made = format === "svg" ? Promise.resolve(new view.Blob([svg], {type: "image/svg+xml"})) : pngOf(doc, svg, options);
    return made.then(function (blob) { download(doc, blob, filename); return filename; });
  }

  // Save the figure drawn in ``plot``: by ``plotly`` (plotly.js) when there is one, else from its drawing.
  function save(plotly, plot, format) {
    if (!plotly) return saveDrawn(plot, format);
    return plotly.downloadImage(plot, imageOptions(format, drawnSize(plot), nameOf(plot)));
  }

  // The row of buttons, put in ``box`` before ``before`` (at its end without one); ``getPlotly`` gives
  // plotly.js (or a promise of it; null: save from the drawing) when a button is pressed; ``px``, the
  // buttons' text size where no style sheet sets it. A second call on the same box adds nothing.
  function addButtons(box, plot, getPlotly, before, px) {
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
      if (px) button.style.fontSize = px + "px";
      button.addEventListener("click", function () {
        Promise.resolve(getPlotly()).then(function (plotly) { return save(plotly, plot, format); })
          .catch(function (error) { row.setAttribute("data-mha-error", String(error)); });
      });
      row.appendChild(button);
    });
    box.insertBefore(row, before || null);
    return row;
  }

  return {FORMATS: FORMATS, PNG_SCALE: PNG_SCALE, titleText: titleText, fileName: fileName, imageOptions: imageOptions,
          drawnSize: drawnSize, nameOf: nameOf, svgText: svgText, saveDrawn: saveDrawn, save: save, addButtons: addButtons};
})();
if (typeof module === "object" && module.exports) module.exports = mhaSave;
