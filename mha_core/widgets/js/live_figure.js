/* A LiveFigure's view (mha_core/widgets/_live_figure.py): the figure its channel holds, drawn with the
   page's one plotly.js (shared().promise, from plotly_library.js) by Plotly.react, redrawn on every
   change of the channel; under it, the buttons that save it as PNG or SVG (save.js).

   An ES module for anywidget. mha_core/widgets/_js.py puts plotly_shared.js (shared), channel.js
   (channel_of) and save.js (mhaSave) in front of it. The named exports are for the unit tests.
*/
/* global shared, channel_of, mhaSave */

// plotly's serializer: a 1-D numeric array is {buffer, dtype, shape}; "_undefined_" is a value left unset.
const ARRAYS = {int8: Int8Array, int16: Int16Array, int32: Int32Array, uint8: Uint8Array, uint16: Uint16Array,
                uint32: Uint32Array, float32: Float32Array, float64: Float64Array};

export function decode(value) {
  if (Array.isArray(value)) return value.map(decode);
  if (value && typeof value === "object") {
    if (value.buffer && value.dtype && ARRAYS[value.dtype]) {
      const view = value.buffer, Type = ARRAYS[value.dtype];
      return new Type(view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength));
    }
    const out = {};
    for (const [key, item] of Object.entries(value)) if (item !== "_undefined_") out[key] = decode(item);
    return out;
  }
  return value;
}

// The plotly configuration of every live figure: no logo, drawn at the builder's size. The mode bar is
// hidden by the group's styles (mha_core/widgets/_base.py); saving is save.js's buttons.
export const CONFIG = {displaylogo: false, responsive: false};

export default {
  async render({ model, el }) {
    let alive = true, waiting = false, drawing = Promise.resolve();
    const plot = document.createElement("div");
    plot.className = "mha-live-figure";
    el.appendChild(plot);
    const fail = (error) => { plot.textContent = "This figure could not be drawn: " + error; };
    let figure;
    try {
      figure = await channel_of(model);
    } catch (error) {
      fail(error);
      return;
    }
    // One draw waits at a time; it reads the figure when it starts, so it shows the newest one.
    const draw = () => {
      if (waiting) return;
      waiting = true;
      drawing = drawing.then(() => shared().promise).then((Plotly) => {
        waiting = false;
        if (!alive) return;
        return Plotly.react(plot, decode(figure.get("_widget_data")), decode(figure.get("_widget_layout")), CONFIG);
      }).catch((error) => {
        waiting = false;
        fail(error);
      });
    };
    draw();
    mhaSave.addButtons(el, plot, () => shared().promise);
    figure.on("change", draw);
    return () => {
      alive = false;
      figure.off("change", draw);
      shared().promise.then((Plotly) => Plotly.purge(plot)).catch(() => {});
    };
  },
};
