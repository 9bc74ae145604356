//! What goes in comes back: runs and their indexes, idempotency records, identities,
//! versions, uploads, timers, and the notification outbox.

use agentprocess_engine::RunState;
use agentprocess_store::{
    AttemptResult, DeliveryStatus, DirectoryTx as _, Keyset, NewNotification, NewRequest, NewUpload, NewVersion, Role,
    RunFilter, Store, StoreTx, TimerRow, Upload, Webhook, WorkKind, WorkQuery,
};

use crate::support::{PutRun as _, TestDb, on_both, run_row, work_row};

on_both!(a_request_id_is_recorded_once_with_its_result, request_ids);
async fn request_ids(db: &TestDb) {
    let store = &db.store;
    let request = |id, result| NewRequest {
        request_id: id,
        tool: "claim",
        args_hash: "h1",
        result,
        at: 1,
    };
    let mut tx = store.begin().await.expect("begin");
    assert!(
        tx.record_request("o", &request("q1", "{\"ok\":1}"))
            .await
            .expect("record")
    );
    tx.commit().await.expect("commit");
    let recorded = store.request("o", "q1").await.expect("read").expect("recorded");
    assert_eq!((recorded.tool.as_str(), recorded.args_hash.as_str()), ("claim", "h1"));
    assert_eq!(recorded.result, "{\"ok\":1}");

    let mut tx = store.begin().await.expect("begin");
    assert!(!tx.record_request("o", &request("q1", "other")).await.expect("record"));
    // The same id in another organization is another request.
    assert!(tx.record_request("p", &request("q1", "other")).await.expect("record"));
    drop(tx);
    assert_eq!(store.request("p", "q1").await.expect("read"), None);
    assert_eq!(
        store.request("o", "q1").await.expect("read").map(|r| r.result),
        Some("{\"ok\":1}".to_owned())
    );

    // Locking a run reads what a requestId recorded, in the same round trip.
    let mut tx = store.begin().await.expect("begin");
    tx.put_run("o", &run_row("r_1", "p", RunState::Active, 1, &[]), true, None)
        .await
        .expect("put");
    tx.commit().await.expect("commit");
    let mut tx = store.begin().await.expect("begin");
    let (run, recorded) = tx.lock_run("o", "r_1", Some("q1")).await.expect("lock").expect("run");
    assert_eq!(
        (run.id.as_str(), recorded.map(|r| r.result)),
        ("r_1", Some("{\"ok\":1}".to_owned()))
    );
    let (_, none) = tx.lock_run("o", "r_1", Some("q2")).await.expect("lock").expect("run");
    assert_eq!(none, None);
    assert!(tx.lock_run("o", "r_2", None).await.expect("lock").is_none());
    drop(tx);

    // Replacing a run records its request in the same write, once.
    let mut changed = run_row("r_1", "p", RunState::Waiting, 1, &[]);
    changed.doc = "{\"v\":2}".to_owned();
    changed.work = vec![work_row("r_1", "s", WorkKind::Agent, 5)];
    let mut tx = store.begin().await.expect("begin");
    tx.lock_run("o", "r_1", None).await.expect("lock");
    assert!(
        tx.put_run("o", &changed, false, Some(&request("q3", "three")))
            .await
            .expect("put")
    );
    tx.commit().await.expect("commit");
    let mut tx = store.begin().await.expect("begin");
    let (run, recorded) = tx.lock_run("o", "r_1", Some("q3")).await.expect("lock").expect("run");
    assert_eq!(
        (run.doc.as_str(), recorded.map(|r| r.result)),
        ("{\"v\":2}", Some("three".to_owned()))
    );
    assert!(
        !tx.put_run("o", &changed, false, Some(&request("q3", "again")))
            .await
            .expect("put")
    );
}

on_both!(runs_are_listed_oldest_first_by_process_state_and_inputs, listing);
async fn listing(db: &TestDb) {
    let store = &db.store;
    let mut tx = store.begin().await.expect("begin");
    for (index, (process, state, vendor)) in [
        ("p", RunState::Active, "acme"),
        ("p", RunState::Waiting, "acme"),
        ("q", RunState::Active, "acme"),
        ("p", RunState::Active, "other"),
        ("p", RunState::Active, "acme"),
    ]
    .into_iter()
    .enumerate()
    {
        let started = 1000 + i64::try_from(index).expect("small") * 10;
        let row = run_row(
            &format!("r_{index}"),
            process,
            state,
            started,
            &[("vendor", vendor), ("amount", "h1")],
        );
        tx.put_run("o", &row, true, None).await.expect("put");
    }
    tx.put_run(
        "x",
        &run_row("r_9", "p", RunState::Active, 1, &[("vendor", "acme")]),
        true,
        None,
    )
    .await
    .expect("put");
    tx.commit().await.expect("commit");

    let ids = |page: &agentprocess_store::Page<agentprocess_store::StoredRun>| {
        page.items.iter().map(|run| run.id.clone()).collect::<Vec<_>>()
    };
    let all = RunFilter {
        limit: 10,
        ..RunFilter::default()
    };
    assert_eq!(
        ids(&store.list_runs("o", &all).await.expect("list")),
        ["r_0", "r_1", "r_2", "r_3", "r_4"]
    );
    let acme_p_active = RunFilter {
        process: Some("p".to_owned()),
        state: Some(RunState::Active),
        inputs: vec![
            ("vendor".to_owned(), "acme".to_owned()),
            ("amount".to_owned(), "h1".to_owned()),
        ],
        limit: 10,
        ..RunFilter::default()
    };
    assert_eq!(
        ids(&store.list_runs("o", &acme_p_active).await.expect("list")),
        ["r_0", "r_4"]
    );

    let wanted = [
        "r_3".to_owned(),
        "r_0".to_owned(),
        "r_9".to_owned(),
        "missing".to_owned(),
    ];
    let mut found: Vec<String> = store
        .runs("o", &wanted)
        .await
        .expect("runs")
        .into_iter()
        .map(|r| r.id)
        .collect();
    found.sort();
    assert_eq!(found, ["r_0", "r_3"]); // r_9 is another organization's
    assert!(store.runs("o", &[]).await.expect("runs").is_empty());

    // Paging: two at a time, the cursor is the last row of the page.
    let mut filter = RunFilter {
        limit: 2,
        ..all.clone()
    };
    let first = store.list_runs("o", &filter).await.expect("list");
    assert_eq!(ids(&first), ["r_0", "r_1"]);
    assert_eq!(
        first.next,
        Some(Keyset {
            at: 1010,
            id: "r_1".to_owned()
        })
    );
    filter.after = first.next;
    let second = store.list_runs("o", &filter).await.expect("list");
    assert_eq!(ids(&second), ["r_2", "r_3"]);
    filter.after = second.next;
    let last = store.list_runs("o", &filter).await.expect("list");
    assert_eq!((ids(&last), last.next), (vec!["r_4".to_owned()], None));

    // Newest first, within a window of start times, paged the same way.
    let mut window = RunFilter {
        started_from: Some(1010),
        started_before: Some(1040),
        newest_first: true,
        limit: 2,
        ..RunFilter::default()
    };
    let first = store.list_runs("o", &window).await.expect("list");
    assert_eq!(ids(&first), ["r_3", "r_2"]);
    window.after = first.next;
    let rest = store.list_runs("o", &window).await.expect("list");
    assert_eq!((ids(&rest), rest.next), (vec!["r_1".to_owned()], None));
    // The same window through the input index.
    let acme = RunFilter {
        inputs: vec![("vendor".to_owned(), "acme".to_owned())],
        limit: 10,
        ..window.clone()
    };
    let acme = RunFilter { after: None, ..acme };
    assert_eq!(ids(&store.list_runs("o", &acme).await.expect("list")), ["r_2", "r_1"]);
    // Every row here is live: a test-mode filter finds none.
    let tests = RunFilter {
        mode: Some(agentprocess_engine::Mode::Test),
        ..all.clone()
    };
    assert!(store.list_runs("o", &tests).await.expect("list").items.is_empty());
    let live = RunFilter {
        mode: Some(agentprocess_engine::Mode::Live),
        ..all
    };
    assert_eq!(store.list_runs("o", &live).await.expect("list").items.len(), 5);
}

on_both!(
    items_of_several_assignees_merge_in_order_and_page_across_them,
    merged_items
);
async fn merged_items(db: &TestDb) {
    let store = &db.store;
    let mut run = run_row("r_1", "p", RunState::Active, 100, &[]);
    let item = |step: &str, since, group: Option<&str>, person: Option<&str>| WorkRow {
        group: group.map(str::to_owned),
        person: person.map(str::to_owned),
        ..work_row("r_1", step, WorkKind::Item, since)
    };
    run.work = vec![
        item("a", 100, Some("finance"), None),
        item("b", 200, None, Some("ann@example.com")),
        item("c", 300, Some("legal"), None),
        item("d", 400, Some("finance"), None),
        item("e", 500, Some("finance"), Some("ann@example.com")),
        item("f", 600, Some("sales"), None),
    ];
    let mut tx = store.begin().await.expect("begin");
    tx.put_run("o", &run, true, None).await.expect("put");
    tx.commit().await.expect("commit");
    let mut query = WorkQuery {
        kind: WorkKind::Item,
        now: 0,
        groups: vec!["finance".to_owned(), "legal".to_owned()],
        person: Some("ann@example.com".to_owned()),
        agent: None,
        process: None,
        after: None,
        limit: 2,
    };
    let mut pages = Vec::new();
    loop {
        let page = store.work("o", &query).await.expect("work");
        pages.push(page.items.iter().map(|row| row.step_id.clone()).collect::<Vec<_>>());
        match page.next {
            Some(next) => query.after = Some(next),
            None => break,
        }
    }
    // In order across the three lists; `e`, both a group's and the person's, once.
    assert_eq!(pages, [vec!["a", "b"], vec!["c", "d"], vec!["e"]]);
}

on_both!(work_lists_ready_steps_expired_leases_and_items_for_the_caller, work);
async fn work(db: &TestDb) {
    let store = &db.store;
    let mut run = run_row("r_1", "p", RunState::Active, 100, &[]);
    run.work = vec![
        work_row("r_1", "a_ready", WorkKind::Agent, 300),
        WorkRow {
            lease_until: Some(1_000),
            ..work_row("r_1", "b_claimed", WorkKind::Agent, 200)
        },
        WorkRow {
            group: Some("finance".to_owned()),
            due_at: Some(800),
            ..work_row("r_1", "c_group", WorkKind::Item, 100)
        },
        WorkRow {
            person: Some("ann@example.com".to_owned()),
            due_at: Some(500),
            ..work_row("r_1", "d_person", WorkKind::Item, 400)
        },
    ];
    let mut tx = store.begin().await.expect("begin");
    tx.put_run("o", &run, true, None).await.expect("put");
    tx.commit().await.expect("commit");

    let agent = |now| WorkQuery {
        kind: WorkKind::Agent,
        now,
        groups: Vec::new(),
        person: None,
        agent: None,
        process: None,
        after: None,
        limit: 10,
    };
    let steps = |page: agentprocess_store::Page<agentprocess_store::WorkRow>| {
        page.items.into_iter().map(|row| row.step_id).collect::<Vec<_>>()
    };
    assert_eq!(steps(store.work("o", &agent(999)).await.expect("work")), ["a_ready"]);
    assert_eq!(
        steps(store.work("o", &agent(1_000)).await.expect("work")),
        ["b_claimed", "a_ready"]
    );
    let person = WorkQuery {
        kind: WorkKind::Item,
        groups: vec!["finance".to_owned()],
        person: Some("ann@example.com".to_owned()),
        ..agent(0)
    };
    assert_eq!(
        steps(store.work("o", &person).await.expect("work")),
        ["c_group", "d_person"]
    );
    let stranger = WorkQuery {
        groups: vec!["legal".to_owned()],
        person: Some("bob@example.com".to_owned()),
        ..person.clone()
    };
    assert!(store.work("o", &stranger).await.expect("work").items.is_empty());
    assert!(store.work("other", &person).await.expect("work").items.is_empty());
    // The gauges' levels: claimable agent steps at a time, and open items.
    let levels = |ready_agent_steps, open_work_items| agentprocess_store::WorkLevels {
        ready_agent_steps,
        open_work_items,
    };
    assert_eq!(store.work_levels(999).await.expect("levels"), levels(1, 2));
    assert_eq!(store.work_levels(1_000).await.expect("levels"), levels(2, 2));
    // Overdue work: what was due by then, longest overdue first, of this organization.
    let overdue = |rows: Vec<WorkRow>| rows.into_iter().map(|row| row.step_id).collect::<Vec<_>>();
    assert!(store.overdue("o", 499, 10).await.expect("overdue").is_empty());
    assert_eq!(
        overdue(store.overdue("o", 900, 10).await.expect("overdue")),
        ["d_person", "c_group"]
    );
    assert_eq!(
        overdue(store.overdue("o", 900, 1).await.expect("overdue")),
        ["d_person"]
    );
    assert!(store.overdue("other", 900, 10).await.expect("overdue").is_empty());

    // Rewriting the run changes the rows named and removes the ones gone.
    run.work = vec![WorkRow {
        since: 50,
        item: Some("{}".to_owned()),
        ..work_row("r_1", "a_ready", WorkKind::Agent, 300)
    }];
    run.gone = vec!["c_group".to_owned(), "d_person".to_owned()];
    let mut tx = store.begin().await.expect("begin");
    assert!(tx.lock_run("o", "r_1", None).await.expect("lock").is_some());
    tx.put_run("o", &run, false, None).await.expect("put");
    tx.commit().await.expect("commit");
    assert!(store.work("o", &person).await.expect("work").items.is_empty());
    let listed = store.work("o", &agent(999)).await.expect("work").items;
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].since, listed[0].item.as_deref()), (50, Some("{}")));
}

use agentprocess_store::WorkRow;

on_both!(
    agent_steps_bound_to_agents_list_only_for_the_agents_and_groups_named,
    bound_agent_steps
);
async fn bound_agent_steps(db: &TestDb) {
    let store = &db.store;
    let mut tx = store.begin().await.expect("begin");
    let version = NewVersion {
        process: "p".to_owned(),
        content_hash: "h".to_owned(),
        source: String::new(),
        frontmatter: "{}".to_owned(),
        body: String::new(),
        roles: "{}".to_owned(),
        agents: r#"{"*":{"agents":["collector"]},"write":{"groups":["erp"]}}"#.to_owned(),
        claimants: vec![
            ("*".to_owned(), "agent", "collector".to_owned()),
            ("write".to_owned(), "group", "erp".to_owned()),
        ],
    };
    assert_eq!(tx.publish("o", &version, 1).await.expect("publish"), 1);
    let mut run = run_row("r_1", "p", RunState::Active, 100, &[]);
    let bound = |step: &str, since, binding: Option<&str>| WorkRow {
        bound_to: binding.map(str::to_owned),
        ..work_row("r_1", step, WorkKind::Agent, since)
    };
    run.work = vec![
        bound("collect", 100, Some("1/*")),
        bound("write", 200, Some("1/write")),
        bound("anyone", 300, None),
        // Claimed, its lease ended by the time of the queries below.
        WorkRow {
            lease_until: Some(0),
            ..bound("lapsed", 400, Some("1/write"))
        },
    ];
    tx.put_run("o", &run, true, None).await.expect("put");
    // Another organization's step of a process of the same name and version, bound
    // with no binding rows of its own: the bindings of "o" admit no agent to it.
    let mut theirs = run_row("r_2", "p", RunState::Active, 100, &[]);
    theirs.work = vec![WorkRow {
        run_id: "r_2".to_owned(),
        ..bound("collect", 100, Some("1/*"))
    }];
    tx.put_run("other", &theirs, true, None).await.expect("put");
    tx.commit().await.expect("commit");
    let steps = |agent: &str, groups: &[&str]| {
        let query = WorkQuery {
            kind: WorkKind::Agent,
            now: 0,
            groups: groups.iter().map(|group| (*group).to_owned()).collect(),
            person: None,
            agent: Some(agent.to_owned()),
            process: None,
            after: None,
            limit: 10,
        };
        async move {
            let page = store.work("o", &query).await.expect("work");
            page.items.into_iter().map(|row| row.step_id).collect::<Vec<_>>()
        }
    };
    assert_eq!(steps("collector", &[]).await, ["collect", "anyone"]);
    assert_eq!(steps("writer", &["erp"]).await, ["write", "anyone", "lapsed"]);
    assert_eq!(
        steps("collector", &["erp"]).await,
        ["collect", "write", "anyone", "lapsed"]
    );
    assert_eq!(steps("stranger", &["sales"]).await, ["anyone"]);
    // The binding is read back with the version, and a version names its own rows.
    let stored = store
        .version("o", "p", Some(1))
        .await
        .expect("read")
        .expect("a version");
    assert_eq!(stored.agents, version.agents);
    let other = WorkQuery {
        kind: WorkKind::Agent,
        now: 0,
        groups: vec!["erp".to_owned()],
        person: None,
        agent: Some("collector".to_owned()),
        process: None,
        after: None,
        limit: 10,
    };
    assert!(store.work("other", &other).await.expect("work").items.is_empty());
}

on_both!(identities_tokens_and_versions_round_trip, identities_and_versions);
async fn identities_and_versions(db: &TestDb) {
    let store = &db.store;
    let mut tx = store.begin().await.expect("begin");
    tx.create_org("o", "o", "Org", 1).await.expect("org");
    let ann = crate::support::person("o", "ann", Role::Operator, &["finance", "legal"]);
    tx.create_identity(&ann, 1).await.expect("identity");
    tx.add_token(&crate::support::mcp_token("o", "ann", "hash-1"))
        .await
        .expect("token");
    for (process, source) in [("b", "v1"), ("b", "v2"), ("a", "v1")] {
        let version = NewVersion {
            process: process.to_owned(),
            content_hash: format!("{process}-{source}"),
            source: source.to_owned(),
            frontmatter: "{}".to_owned(),
            body: String::new(),
            roles: "{}".to_owned(),
            agents: "{}".to_owned(),
            claimants: Vec::new(),
        };
        tx.publish("o", &version, 2).await.expect("publish");
    }
    let zed = crate::support::person("o", "zed", Role::Member, &[]);
    tx.create_identity(&zed, 1).await.expect("identity");
    tx.commit().await.expect("commit");
    // Every identity with its own groups, by id.
    assert_eq!(store.identities("o").await.expect("read"), [ann.clone(), zed]);
    assert!(store.identities("other").await.expect("read").is_empty());

    assert_eq!(
        store.identity_by_token("hash-1", 2).await.expect("read"),
        Some(ann.clone())
    );
    assert_eq!(store.identity_by_token("hash-2", 2).await.expect("read"), None);
    let mut tx = store.begin().await.expect("begin");
    assert_eq!(tx.revoke_tokens("o", "ann", 3).await.expect("revoke"), 1);
    tx.commit().await.expect("commit");
    assert_eq!(store.identity_by_token("hash-1", 2).await.expect("read"), None);
    let latest = store.latest_versions("o", None, 10).await.expect("latest");
    let names: Vec<(String, u32)> = latest.iter().map(|v| (v.process.clone(), v.number)).collect();
    assert_eq!(names, [("a".to_owned(), 1), ("b".to_owned(), 2)]);
    assert_eq!(
        store.latest_versions("o", Some("a"), 10).await.expect("latest").len(),
        1
    );
    assert_eq!(
        store.version("o", "b", Some(1)).await.expect("v").map(|v| v.source),
        Some("v1".to_owned())
    );
    assert_eq!(
        store.version("o", "b", None).await.expect("v").map(|v| v.number),
        Some(2)
    );
    assert!(store.version("other", "b", None).await.expect("v").is_none());
}

on_both!(a_migrated_database_has_no_pending_migrations, migrations);
async fn migrations(db: &TestDb) {
    assert_eq!(db.store.pending_migrations().await.expect("pending"), Vec::<i64>::new());
}

on_both!(timers_fire_earliest_first_and_are_removed_once, timers);
async fn timers(db: &TestDb) {
    let store = &db.store;
    let timer = |id: &str, at| TimerRow {
        org: "o".to_owned(),
        run_id: "r_1".to_owned(),
        timer_id: id.to_owned(),
        fire_at: at,
        trace_parent: None,
    };
    let trace_parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut tx = store.begin().await.expect("begin");
    tx.schedule_timer(&TimerRow {
        trace_parent: Some(trace_parent.to_owned()),
        ..timer("late", 300)
    })
    .await
    .expect("schedule");
    tx.schedule_timer(&timer("early", 100)).await.expect("schedule");
    tx.schedule_timer(&timer("moved", 900)).await.expect("schedule");
    tx.schedule_timer(&timer("moved", 200)).await.expect("reschedule");
    tx.commit().await.expect("commit");
    assert_eq!(store.next_timer_at().await.expect("next"), Some(100));
    let ids = |rows: Vec<TimerRow>| rows.into_iter().map(|t| t.timer_id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.timers_before(250, None, 10).await.expect("due")),
        ["early", "moved"]
    );
    // One run's timers, and no other run's or organization's.
    let mut tx = store.begin().await.expect("begin");
    tx.schedule_timer(&TimerRow {
        run_id: "r_2".to_owned(),
        ..timer("other-run", 50)
    })
    .await
    .expect("schedule");
    tx.schedule_timer(&TimerRow {
        org: "p".to_owned(),
        ..timer("other-org", 60)
    })
    .await
    .expect("schedule");
    tx.commit().await.expect("commit");
    assert_eq!(
        ids(store.run_timers("o", "r_1").await.expect("run's")),
        ["early", "moved", "late"]
    );
    let mut tx = store.begin().await.expect("begin");
    assert!(tx.remove_timer("o", "r_2", "other-run").await.expect("remove"));
    assert!(tx.remove_timer("p", "r_1", "other-org").await.expect("remove"));
    tx.commit().await.expect("commit");
    // Paging: the page after `early` starts at `moved`.
    let first = store.timers_before(1_000, None, 1).await.expect("page");
    assert_eq!(ids(first.clone()), ["early"]);
    let rest = store.timers_before(1_000, first.last(), 10).await.expect("page");
    assert_eq!(ids(rest), ["moved", "late"]);
    let mut tx = store.begin().await.expect("begin");
    assert!(tx.remove_timer("o", "r_1", "early").await.expect("remove"));
    assert!(!tx.remove_timer("o", "r_1", "early").await.expect("remove"));
    tx.put_run("o", &run_row("r_1", "p", RunState::Active, 1, &[]), true, None)
        .await
        .expect("run");
    // A timer is taken only when due, once, with its run.
    let taken = |found: (
        Option<agentprocess_store::StoredRun>,
        Option<agentprocess_store::TakenTimer>,
    )| { (found.0.map(|run| run.id), found.1.map(|timer| timer.due_at)) };
    let take = tx.lock_run_for_timer("o", "r_1", "late", 299).await.expect("take");
    assert_eq!(taken(take), (Some("r_1".to_owned()), None));
    // It comes back with the trace context of the call that set it.
    let take = tx.lock_run_for_timer("o", "r_1", "late", 350).await.expect("take");
    assert_eq!(
        take.1.as_ref().and_then(|timer| timer.trace_parent.as_deref()),
        Some(trace_parent)
    );
    assert_eq!(taken(take), (Some("r_1".to_owned()), Some(300)));
    let take = tx.lock_run_for_timer("o", "r_1", "late", 350).await.expect("take");
    assert_eq!(taken(take), (Some("r_1".to_owned()), None));
    // A timer of a run that is gone is still taken (and nothing else happens).
    tx.schedule_timer(&TimerRow {
        run_id: "r_gone".to_owned(),
        ..timer("t", 10)
    })
    .await
    .expect("schedule");
    let take = tx.lock_run_for_timer("o", "r_gone", "t", 350).await.expect("take");
    assert_eq!(taken(take), (None, Some(10)));
    tx.commit().await.expect("commit");
    assert_eq!(ids(store.timers_before(1_000, None, 10).await.expect("due")), ["moved"]);
}

on_both!(notifications_fan_out_to_webhooks_and_are_taken_once, outbox);
async fn outbox(db: &TestDb) {
    let store = &db.store;
    let webhook = |id: &str| Webhook {
        id: id.to_owned(),
        url: format!("http://127.0.0.1:9/{id}"),
        secret: "whsec_a2V5".to_owned(),
        created_at: 1,
    };
    let notification = |id: &'static str, at| NewNotification {
        id,
        run_id: "r_1",
        event: "run.ended",
        body: "{}",
        created_at: at,
        trace_parent: None,
    };
    let mut tx = store.begin().await.expect("begin");
    tx.add_webhook("o", &webhook("wh_a")).await.expect("webhook");
    tx.add_webhook("o", &webhook("wh_b")).await.expect("webhook");
    tx.add_webhook("other", &webhook("wh_c")).await.expect("webhook");
    assert_eq!(
        tx.add_notification("o", &notification("n_1", 100))
            .await
            .expect("notify"),
        2,
        "one delivery per endpoint of the organization"
    );
    let trace_parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    tx.add_notification(
        "o",
        &NewNotification {
            trace_parent: Some(trace_parent),
            ..notification("n_2", 500)
        },
    )
    .await
    .expect("notify");
    tx.commit().await.expect("commit");
    assert_eq!(store.webhooks("o").await.expect("list").len(), 2);
    // Due at 100: n_1 to both endpoints; taken once, with one attempt counted.
    let taken = store.take_deliveries("o", 200, 10_000, 10).await.expect("take");
    let mut keys: Vec<_> = taken
        .iter()
        .map(|d| (d.notification_id.as_str(), d.webhook_id.as_str(), d.attempts))
        .collect();
    keys.sort();
    assert_eq!(keys, [("n_1", "wh_a", 1), ("n_1", "wh_b", 1)]);
    assert_eq!(taken[0].url, format!("http://127.0.0.1:9/{}", taken[0].webhook_id));
    assert!(
        store
            .take_deliveries("o", 200, 10_000, 10)
            .await
            .expect("take")
            .is_empty()
    );
    let delivered = AttemptResult {
        status: DeliveryStatus::Delivered,
        next_at: 300,
        status_code: Some(204),
        error: None,
        at: 300,
    };
    let retried = AttemptResult {
        status: DeliveryStatus::Pending,
        next_at: 400,
        status_code: Some(500),
        error: Some("the endpoint answered 500".to_owned()),
        at: 300,
    };
    let (a, b) = if taken[0].webhook_id == "wh_a" {
        (&taken[0], &taken[1])
    } else {
        (&taken[1], &taken[0])
    };
    store.record_attempt(a, &delivered).await.expect("record");
    store.record_attempt(b, &retried).await.expect("record");
    // At 600: the retry of n_1 to wh_b, and n_2 to both.
    let again = store.take_deliveries("o", 600, 10_000, 10).await.expect("take");
    assert_eq!(again.len(), 3);
    assert!(again.iter().any(|d| d.notification_id == "n_1" && d.attempts == 2));
    // A delivery carries the trace context of the change that caused it.
    for delivery in &again {
        let expected = (delivery.notification_id == "n_2").then_some(trace_parent);
        assert_eq!(delivery.trace_parent.as_deref(), expected);
    }
    // Removing an endpoint gives up its pending deliveries.
    let mut tx = store.begin().await.expect("begin");
    assert!(tx.remove_webhook("o", "wh_b", 700).await.expect("remove"));
    assert!(!tx.remove_webhook("o", "wh_b", 700).await.expect("remove"));
    tx.commit().await.expect("commit");
    let records = store.deliveries("o", 10).await.expect("records");
    assert_eq!(records.len(), 4);
    let n1a = records
        .iter()
        .find(|r| r.notification_id == "n_1" && r.webhook_id == "wh_a")
        .expect("n_1 a");
    assert_eq!(
        (n1a.status, n1a.last_status_code, n1a.attempts),
        (DeliveryStatus::Delivered, Some(204), 1)
    );
    let n1b = records
        .iter()
        .find(|r| r.notification_id == "n_1" && r.webhook_id == "wh_b")
        .expect("n_1 b");
    assert_eq!(
        (n1b.status, n1b.last_error.as_deref()),
        (DeliveryStatus::Failed, Some("endpoint removed"))
    );
    assert_eq!(records[0].notification_id, "n_2", "newest first");
    assert!(store.deliveries("other", 10).await.expect("records").is_empty());
}

on_both!(uploads_belong_to_their_organization, uploads);
async fn uploads(db: &TestDb) {
    let store = &db.store;
    let upload = Upload {
        id: "f_1".to_owned(),
        sha256: "ab".repeat(32),
        bytes: 3,
        content_type: "text/plain".to_owned(),
        file_name: "a.txt".to_owned(),
        storage_key: "o/f_1".to_owned(),
    };
    let mut tx = store.begin().await.expect("begin");
    tx.put_upload(
        "o",
        &NewUpload {
            upload: upload.clone(),
            uploaded_by: "agent".to_owned(),
            created_at: 1,
        },
    )
    .await
    .expect("upload");
    tx.commit().await.expect("commit");
    assert_eq!(store.upload("o", "f_1").await.expect("read"), Some(upload.clone()));
    assert_eq!(store.upload("x", "f_1").await.expect("read"), None);

    // A second upload, later; only uploads never cited and old enough are listed.
    let mut tx = store.begin().await.expect("begin");
    let second = Upload {
        id: "f_2".to_owned(),
        storage_key: "o/f_2".to_owned(),
        ..upload.clone()
    };
    let new = NewUpload {
        upload: second,
        uploaded_by: "agent".to_owned(),
        created_at: 50,
    };
    tx.put_upload("o", &new).await.expect("upload");
    assert_eq!(
        tx.cite_upload("x", "f_1", 10).await.expect("cite"),
        None,
        "another organization's"
    );
    assert_eq!(tx.cite_upload("o", "f_1", 10).await.expect("cite"), Some(upload));
    tx.commit().await.expect("commit");
    let listed = |rows: Vec<(String, String)>| rows.into_iter().map(|(_, id)| id).collect::<Vec<_>>();
    assert_eq!(listed(store.uncited_uploads(100, 10).await.expect("list")), ["f_2"]);
    assert!(
        store.uncited_uploads(50, 10).await.expect("list").is_empty(),
        "not old enough"
    );
    let mut tx = store.begin().await.expect("begin");
    assert_eq!(
        tx.remove_uncited_upload("o", "f_1").await.expect("remove"),
        None,
        "cited: kept"
    );
    assert_eq!(
        tx.remove_uncited_upload("o", "f_2").await.expect("remove"),
        Some("o/f_2".to_owned())
    );
    tx.commit().await.expect("commit");
    assert!(store.upload("o", "f_1").await.expect("read").is_some());
    assert_eq!(store.upload("o", "f_2").await.expect("read"), None);
}
