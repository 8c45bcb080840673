// Live feed: new audit records arrive as server-sent events and are added on top of the table.
// Every value is set with textContent, so a customer's "<script>" stays text.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var rows = document.getElementById("rows");
  if (!live || !rows || !window.EventSource) { return; }
  var url = live.getAttribute("data-stream") + "&after=" + encodeURIComponent(live.getAttribute("data-after"));
  var source = new EventSource(url);

  function cell(tr, text, className) {
    var td = document.createElement("td");
    if (className) { td.className = className; }
    td.textContent = text === null || text === undefined ? "" : String(text);
    tr.appendChild(td);
    return td;
  }

  function link(td, href, text, className) {
    var a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    if (className) { a.className = className; }
    td.textContent = "";
    td.appendChild(a);
  }

  source.addEventListener("record", function (event) {
    var row = JSON.parse(event.data);
    var tr = document.createElement("tr");
    tr.className = row.kind + (row.flags.length ? " flagged" : "") + " fresh";
    tr.setAttribute("data-id", row.id);
    cell(tr, row.time, "time");
    link(cell(tr, ""), "/chat/" + encodeURIComponent(row.chat_id), row.chat_id);
    cell(tr, row.message, "text");
    cell(tr, row.answer, "text");
    var status = cell(tr, row.status);
    row.codes.forEach(function (code, i) {
      var span = document.createElement("span");
      span.className = "code";
      span.textContent = code;
      span.title = row.reasons[i] || "";
      status.appendChild(document.createTextNode(" "));
      status.appendChild(span);
    });
    cell(tr, row.latency_ms, "num");
    cell(tr, row.model_calls, "num");
    cell(tr, row.flags.join(" "));
    link(cell(tr, ""), "/turn/" + encodeURIComponent(row.id), "详情", "detail");
    rows.insertBefore(tr, rows.firstChild);
  });
  source.onerror = function () { live.textContent = "实时更新已断开，正在重连…"; };
  source.onopen = function () { live.textContent = "实时更新中"; };
}());
