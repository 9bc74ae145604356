#!/usr/bin/env bash
# An agent and a person take one purchase-order run (examples/processes/purchase-order)
# to its finish over MCP, with nothing but curl and python3. Start the dev server first:
#
#   cargo run --release -- dev --details dev.json
#
# then run this script from the repository root (or pass the details file):
#
#   examples/walkthrough.sh [dev.json]
set -euo pipefail

details="${1:-dev.json}"
field() { python3 -c "import json,sys; d=json.load(open('$details')); print($1)"; }
URL=$(field 'd["url"]')
AGENT=$(field 'd["identities"]["agent-1"]["token"]')
ALICE=$(field 'd["identities"]["alice"]["token"]')

# call TOKEN TOOL ARGUMENTS-JSON: one MCP tools/call; prints the { ok, data } result.
call() {
  curl -sS "$URL" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2025-11-25' -H "Authorization: Bearer $1" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$2\",\"arguments\":$3}}" |
    python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["result"]["structuredContent"]))'
}
# pick JSON EXPRESSION: reads a result on stdin, prints one value of it (r is the result).
pick() { python3 -c "import json,sys; r=json.load(sys.stdin); assert r['ok'], r; print($1)"; }
# state STEP: the expression for that step's state in a run view.
state() { echo "[s for s in r['data']['steps'] if s['id']=='$1'][0]['state']"; }
# decide_call: reads Alice's get_work on stdin, prints the decide arguments of this run's item.
decide_call() { pick "json.dumps([i for i in r['data']['items'] if i['runId']=='$run'][0]['workItem']['decide']['arguments'])"; }
new_id() { python3 -c 'import uuid; print(uuid.uuid4())'; }

echo "1. Alice starts a run of purchase-order for two monitors."
run=$(call "$ALICE" start_run "{\"process\":\"purchase-order\",\"requestId\":\"$(new_id)\",
  \"inputs\":{\"item\":\"Two 27-inch monitors\",\"supplier\":\"Nordic Displays\",\"amount\":640,
  \"costCenter\":\"CC-4100\",\"neededBy\":\"2026-12-18\"}}" | pick 'r["data"]["run"]["id"]')
echo "   run $run"

echo "2. The agent finds check_budget in get_work, claims it, and routes the request to approval."
step=$(call "$AGENT" get_work '{"process":"purchase-order"}' |
  pick "[i for i in r['data']['items'] if i['runId']=='$run'][0]['stepId']")
token=$(call "$AGENT" claim "{\"runId\":\"$run\",\"stepId\":\"$step\",\"requestId\":\"$(new_id)\"}" | pick 'r["data"]["token"]')
call "$AGENT" submit "{\"token\":\"$token\",\"requestId\":\"$(new_id)\",
  \"output\":{\"budgetRemaining\":12400,\"supplierActive\":true},
  \"evidence\":[{\"kind\":\"link\",\"ref\":\"https://erp.example.com/budgets/CC-4100\"}],
  \"next\":\"approval\",\"reason\":\"12,400 EUR left on CC-4100 covers 640 EUR; the supplier is active.\",
  \"summary\":\"Checked the budget of CC-4100 and the supplier record.\"}" |
  pick "'   $step: ' + $(state "$step") + ', approval: ' + $(state approval)"

echo "3. Alice sees the approval in her work items and approves it with the exact decide call."
decide=$(call "$ALICE" get_work '{}' | decide_call)
call "$ALICE" decide "$(python3 -c "import json,uuid; a=json.loads('$decide'); a.update(decision='approved', requestId=str(uuid.uuid4())); print(json.dumps(a))")" |
  pick "'   approval: ' + $(state approval)"

echo "4. The agent places the order in the ERP."
token=$(call "$AGENT" claim "{\"runId\":\"$run\",\"stepId\":\"place_order\",\"requestId\":\"$(new_id)\"}" | pick 'r["data"]["token"]')
call "$AGENT" submit "{\"token\":\"$token\",\"requestId\":\"$(new_id)\",
  \"output\":{\"poNumber\":\"PO-2026-0142\"},
  \"evidence\":[{\"kind\":\"link\",\"ref\":\"https://erp.example.com/po/PO-2026-0142\"}],
  \"summary\":\"Created PO-2026-0142 and sent it through the supplier portal.\"}" |
  pick "'   place_order: ' + $(state place_order) + ', supplier_confirmation: ' + $(state supplier_confirmation)"

echo "5. The supplier portal reports the confirmation as an event; the run finishes."
call "$AGENT" send_event "{\"runId\":\"$run\",\"name\":\"supplier_confirmed\",\"requestId\":\"$(new_id)\",
  \"data\":{\"confirmedDelivery\":\"2026-12-16\"}}" | pick '"   consumed by " + r["data"]["consumedBy"]'
call "$ALICE" get_run "{\"runId\":\"$run\"}" | pick '"   run " + r["data"]["run"]["state"] + ", outcome " + str(r["data"]["run"]["outcome"])'
