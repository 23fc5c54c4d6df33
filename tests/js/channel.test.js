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
