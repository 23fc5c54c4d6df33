// channel.js: an anywidget's channel, the plain ipywidgets model the kernel talks to after the widget is shown.
const test = require("node:test");
const assert = require("node:assert/strict");
const { channel_of } = require("../../mha_classroom/widgets/js/channel.js");

// A model whose manager has the channel after ``late`` failed look-ups.
function model(ref, late = 0) {
  const asked = [];
  const channel = { name: "channel" };
  return {
    asked,
    channel,
    get: (key) => (key === "_channel" ? ref : undefined),
    widget_manager: {
      get_model: async (id) => {
        asked.push(id);
        if (asked.length <= late) throw new Error("not yet registered");
        return channel;
      },
    },
  };
}
const noWait = async () => {};

test("the channel is the model the reference names", async () => {
  const m = model("IPY_MODEL_abc123");
  assert.equal(await channel_of(m, noWait), m.channel);
  assert.deepEqual(m.asked, ["abc123"]);
});

test("a manager still registering the channel is asked again, waiting longer each time", async () => {
  const m = model("IPY_MODEL_x", 3);
  const waits = [];
  assert.equal(await channel_of(m, async (ms) => { waits.push(ms); }), m.channel);
  assert.deepEqual(waits, [50, 100, 150]);
});

test("after 21 look-ups it gives up with the manager's error", async () => {
  const m = model("IPY_MODEL_x", 1000);
  await assert.rejects(channel_of(m, noWait), /not yet registered/);
  assert.equal(m.asked.length, 21);
});

test("a widget without a channel says so", async () => {
  await assert.rejects(channel_of(model(""), noWait), /this widget has no _channel/);
  await assert.rejects(channel_of(model(undefined), noWait), /this widget has no _channel/);
});

test("any other model is found by its reference, with the same retries, and a bad reference is refused", async () => {
  const { model_of } = require("../../mha_classroom/widgets/js/channel.js");
  const m = model("IPY_MODEL_x", 2);
  assert.equal(await model_of(m, "IPY_MODEL_control7", noWait), m.channel);
  assert.deepEqual(m.asked, ["control7", "control7", "control7"]);
  await assert.rejects(model_of(m, "control7", noWait), /not a widget reference: control7/);
});
