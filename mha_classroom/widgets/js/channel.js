/* await channel_of(model): an anywidget's channel, the plain ipywidgets model that carries what the
   kernel tells the widget after it is shown (mha_classroom/widgets/_channel.py says why). It is a Backbone
   model: get, on("change", ...), off. The channel is created before the widget that refers to it, so
   the page has it; a few short retries cover a manager still registering it. await model_of(model, ref):
   any other model the page has, by its reference (a held group's controls, live_figure.js).

   Put in front of an anywidget's module by mha_classroom/widgets/_js.py; module.exports under node.
*/
/* exported channel_of, model_of */
// The model a reference "IPY_MODEL_<id>" names, from the page's widget manager; a few short retries cover a
// manager still registering it.
async function model_of(model, ref, wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms))) {
  if (!String(ref || "").startsWith("IPY_MODEL_")) throw new Error(`not a widget reference: ${ref}`);
  const id = String(ref).slice("IPY_MODEL_".length);
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await model.widget_manager.get_model(id);
    } catch (error) {
      if (attempt >= 20) throw error;
      await wait(50 * (attempt + 1));
    }
  }
}

async function channel_of(model, wait) {
  const ref = String(model.get("_channel") || "");
  if (!ref.startsWith("IPY_MODEL_")) throw new Error("this widget has no _channel");
  return model_of(model, ref, wait);
}
if (typeof module === "object" && module.exports) module.exports = { channel_of, model_of };
