"""The rule that lets PostgreSQL be sharded by organization (Citus or any tenant-sharded
PostgreSQL): every statement on an organization's tables names exactly one
organization, by an `org_id` equality to a value, for every table it touches, so the
statement can be routed to the one shard holding that organization.

Tables are of two kinds:
- *distributed*: every table with an `org_id` column, except the directory below;
- *directory*: looked up by a credential or a global id before the organization is
  known (a bearer token's hash, a session's hash, an OAuth client id, an email
  domain); they are small, change rarely per request, and become reference tables.

A statement that reads or writes every organization on purpose (a background sweep)
carries the comment `/* all organizations: <why> */` and is listed, not refused; on a
sharded database it runs once per shard. The migrations' own statements (schema
changes and data fixes, run once per database when the servers start) are listed too:
on Citus they run as multi-shard commands.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path

import pglast
from pglast import ast
from pglast.enums import A_Expr_Kind, BoolExprType, ConstrType, SetOperation

DIRECTORY = frozenset({
    "organizations",
    "org_domains",
    "access_tokens",
    "sessions",
    "oauth_clients",
    "oauth_client_secrets",
    "oauth_apps",
    "oauth_grants",
    "oauth_codes",
    "oauth_refresh_tokens",
    "oauth_assertions",
})

# Bookkeeping of the migration runner, kept by the coordinator.
BOOKKEEPING = frozenset({"_sqlx_migrations"})

ALL_ORGANIZATIONS = "/* all organizations:"

ORG = "org_id"

UNIQUE_KINDS = (ConstrType.CONSTR_PRIMARY, ConstrType.CONSTR_UNIQUE)

# Mentions that are no table of ours: the catalogs (the migration runner reads them)
# and a subquery's alias.
SYSTEM_SCHEMAS = frozenset({"pg_catalog", "information_schema"})
SYSTEM = "(catalog)"
SUBQUERY = "(subquery)"


@dataclass
class Schema:
    """The tables the migrations create, with their columns."""

    columns: dict[str, set[str]]
    # Each table's primary key and unique indexes, by name, with their columns.
    unique_keys: dict[str, dict[str, list[str]]]
    # The fingerprints (pglast.fingerprint: constants left out, as pg_stat_statements
    # leaves them out) of every statement of the migrations.
    migration_statements: set[str] = field(default_factory=set)

    @classmethod
    def from_migrations(cls, folder: Path) -> "Schema":
        columns: dict[str, set[str]] = {}
        keys: dict[str, dict[str, list[str]]] = {}
        migration_statements: set[str] = set()
        for path in sorted(glob.glob(str(folder / "*.sql"))):
            text = Path(path).read_text()
            for raw in pglast.parse_sql(text):
                statement = raw.stmt
                # A length of 0 means "to the end".
                end = raw.stmt_location + raw.stmt_len if raw.stmt_len else len(text)
                migration_statements.add(pglast.fingerprint(text[raw.stmt_location:end]))
                if isinstance(statement, ast.CreateStmt):
                    table = statement.relation.relname
                    columns[table] = set()
                    keys[table] = {}
                    for element in statement.tableElts:
                        if isinstance(element, ast.ColumnDef):
                            columns[table].add(element.colname)
                            if any(c.contype == ConstrType.CONSTR_PRIMARY for c in element.constraints or ()):
                                keys[table]["primary key"] = [element.colname]
                        elif isinstance(element, ast.Constraint) and element.contype in UNIQUE_KINDS:
                            keys[table]["primary key"] = [key.sval for key in element.keys]
                elif isinstance(statement, ast.AlterTableStmt):
                    for command in statement.cmds:
                        if isinstance(command.def_, ast.ColumnDef):
                            columns[statement.relation.relname].add(command.def_.colname)
                elif isinstance(statement, ast.IndexStmt) and statement.unique:
                    keys[statement.relation.relname][statement.idxname] = [
                        param.name for param in statement.indexParams
                    ]
                elif isinstance(statement, ast.DropStmt):
                    for table_keys in keys.values():
                        for name in statement.objects:
                            table_keys.pop(name[-1].sval, None)
        return cls(columns, keys, migration_statements)

    def is_migration(self, sql: str) -> bool:
        """Whether `sql` is one of the migrations' statements."""
        try:
            return pglast.fingerprint(sql) in self.migration_statements
        except pglast.parser.ParseError:
            return False

    def keys_without_org(self) -> list[str]:
        """Primary keys and unique indexes of distributed tables that leave out org_id:
        a sharded database cannot enforce them."""
        return [
            f"{table}: {name} ({', '.join(columns)})"
            for table in sorted(self.distributed())
            for name, columns in self.unique_keys.get(table, {}).items()
            if ORG not in columns
        ]

    def distributed(self) -> set[str]:
        return {table for table, names in self.columns.items() if ORG in names} - DIRECTORY

    def unclassified(self) -> set[str]:
        """Tables that are neither distributed (no `org_id`) nor listed as directory."""
        return {table for table, names in self.columns.items() if ORG not in names} - DIRECTORY


@dataclass(eq=False)
class Instance:
    """One mention of a table in a statement (`FROM runs r`)."""

    table: str


@dataclass(eq=False)
class Level:
    """One query level: the tables its FROM (or target) names, by the name it uses."""

    parent: "Level | None"
    names: dict[str, Instance] = field(default_factory=dict)

    def resolve(self, qualifier: str | None, schema: Schema) -> Instance | None:
        level: Level | None = self
        while level is not None:
            if qualifier is not None:
                if qualifier in level.names:
                    return level.names[qualifier]
            else:
                holders = [i for i in level.names.values() if ORG in schema.columns.get(i.table, ())]
                if len(holders) == 1:
                    return holders[0]
                if holders:
                    return None
            level = level.parent
        return None


class Check:
    """Reads one statement; `problems` says every way it breaks the rule."""

    def __init__(self, sql: str, schema: Schema) -> None:
        self.schema = schema
        self.distributed = schema.distributed()
        self.instances: list[Instance] = []
        self.parents: dict[object, object] = {}
        self.problems: list[str] = []
        self.ctes: set[str] = set()
        for raw in pglast.parse_sql(sql):
            self.statement(raw.stmt, None)
        self.conclude()

    # union-find over table mentions and the values their org_id equals
    def find(self, node: object) -> object:
        while self.parents.get(node, node) is not node:
            node = self.parents[node]
        return node

    def union(self, a: object, b: object) -> None:
        self.parents.setdefault(a, a)
        self.parents.setdefault(b, b)
        self.parents[self.find(a)] = self.find(b)

    def statement(self, node: ast.Node, parent: Level | None) -> None:
        if isinstance(node, ast.SelectStmt):
            self.select(node, parent)
        elif isinstance(node, (ast.UpdateStmt, ast.DeleteStmt, ast.InsertStmt)):
            self.write(node, parent)
        else:
            self.nested(node, parent)

    def with_clause(self, node: ast.Node, parent: Level | None) -> None:
        clause = getattr(node, "withClause", None)
        for cte in (clause.ctes if clause else None) or ():
            self.ctes.add(cte.ctename)
            self.statement(cte.ctequery, parent)

    def select(self, node: ast.SelectStmt, parent: Level | None) -> Level | None:
        self.with_clause(node, parent)
        if node.op != SetOperation.SETOP_NONE:
            self.statement(node.larg, parent)
            self.statement(node.rarg, parent)
            return None
        level = Level(parent)
        for item in node.fromClause or ():
            self.from_item(item, level)
        self.conditions(node.whereClause, level)
        self.conditions(node.havingClause, level)
        for rows in node.valuesLists or ():
            self.nested(rows, level)
        for part in (node.targetList, node.whereClause, node.havingClause, node.sortClause):
            self.nested(part, level)
        return level

    def write(self, node: ast.Node, parent: Level | None) -> None:
        self.with_clause(node, parent)
        level = Level(parent)
        target = self.mention(node.relation, level)
        for item in getattr(node, "fromClause", None) or getattr(node, "usingClause", None) or ():
            self.from_item(item, level)
        if isinstance(node, ast.InsertStmt):
            self.insert(node, target, level)
            return
        if isinstance(node, ast.UpdateStmt) and target.table in self.distributed:
            if any(column.name == ORG for column in node.targetList):
                self.problems.append(f"moves rows of {target.table} to another organization (sets {ORG})")
        self.conditions(node.whereClause, level)
        self.nested(node.whereClause, level)
        self.nested(getattr(node, "targetList", None), level)

    def insert(self, node: ast.InsertStmt, target: Instance, level: Level) -> None:
        names = [column.name for column in node.cols or ()]
        source = node.selectStmt
        if ORG in names and source is not None:
            index = names.index(ORG)
            if source.valuesLists:
                for row in source.valuesLists:
                    self.equate(target, row[index], level)
            elif source.op == SetOperation.SETOP_NONE and source.targetList:
                inner = self.select(source, level.parent)
                self.equate(target, source.targetList[index].val, inner)
                source = None
        if source is not None:
            if source.valuesLists:
                for row in source.valuesLists:
                    self.nested(row, level)
            else:
                self.statement(source, level.parent)
        conflict = node.onConflictClause
        if conflict is not None:
            self.nested(conflict.targetList, level)
            self.nested(conflict.whereClause, level)

    def from_item(self, item: ast.Node, level: Level) -> None:
        if isinstance(item, ast.RangeVar):
            self.mention(item, level)
        elif isinstance(item, ast.JoinExpr):
            self.from_item(item.larg, level)
            self.from_item(item.rarg, level)
            self.conditions(item.quals, level)
            self.nested(item.quals, level)
        elif isinstance(item, ast.RangeSubselect):
            self.statement(item.subquery, level.parent if not item.lateral else level)
            if item.alias is not None:
                level.names[item.alias.aliasname] = Instance(SUBQUERY)
        else:
            self.nested(item, level)

    def mention(self, relation: ast.RangeVar, level: Level) -> Instance:
        system = relation.schemaname in SYSTEM_SCHEMAS or relation.relname.startswith("pg_")
        instance = Instance(SYSTEM if system else relation.relname)
        name = relation.alias.aliasname if relation.alias else relation.relname
        level.names[name] = instance
        if relation.relname not in self.ctes:
            self.instances.append(instance)
        return instance

    def conditions(self, node: ast.Node | None, level: Level) -> None:
        """The `org_id = x` conjuncts of a WHERE or ON, joined into the union-find.
        Only top-level AND terms pin: `a OR org_id = $1` does not."""
        if node is None:
            return
        if isinstance(node, ast.BoolExpr) and node.boolop == BoolExprType.AND_EXPR:
            for arg in node.args:
                self.conditions(arg, level)
            return
        if isinstance(node, ast.A_Expr) and node.kind == A_Expr_Kind.AEXPR_OP and node.name[-1].sval == "=":
            left = self.side(node.lexpr, level)
            right = self.side(node.rexpr, level)
            if isinstance(left, Instance) and right is not None:
                self.union(left, right)
            elif isinstance(right, Instance) and left is not None:
                self.union(right, left)

    def equate(self, target: Instance, value: ast.Node, level: Level) -> None:
        side = self.side(value, level)
        if side is not None:
            self.union(target, side)

    def side(self, node: ast.Node, level: Level) -> object | None:
        """An org_id column (its table mention), a value (a parameter or a constant),
        or None for anything else."""
        while isinstance(node, ast.TypeCast):
            node = node.arg
        if isinstance(node, ast.ParamRef):
            return f"${node.number}"
        if isinstance(node, ast.A_Const):
            return f"constant {node.val!r}"
        if isinstance(node, ast.ColumnRef):
            fields = [part.sval for part in node.fields if isinstance(part, ast.String)]
            if fields and fields[-1] == ORG:
                return level.resolve(fields[-2] if len(fields) > 1 else None, self.schema)
        return None

    def nested(self, node: object, level: Level | None) -> None:
        """Subqueries anywhere below `node`, each a level of its own under `level`."""
        if node is None:
            return
        if isinstance(node, tuple):
            for item in node:
                self.nested(item, level)
            return
        if isinstance(node, ast.SubLink):
            self.statement(node.subselect, level)
            self.nested(node.testexpr, level)
            return
        if isinstance(node, (ast.SelectStmt, ast.UpdateStmt, ast.DeleteStmt, ast.InsertStmt)):
            self.statement(node, level)
            return
        if isinstance(node, ast.Node):
            for name in node:
                self.nested(getattr(node, name), level)

    def conclude(self) -> None:
        values: set[object] = set()
        for instance in self.instances:
            table = instance.table
            if table in DIRECTORY or table in BOOKKEEPING or table in (SUBQUERY, SYSTEM):
                continue
            if table not in self.distributed:
                self.problems.append(f"touches {table}, which is neither distributed by {ORG} nor a directory table")
                continue
            root = self.find(instance)
            pinned = {node for node in self.parents if isinstance(node, str) and self.find(node) is root}
            if not pinned:
                self.problems.append(f"reads or writes {table} without an {ORG} equality to one value")
            values |= {root} if pinned else set()
        if len(values) > 1:
            self.problems.append("joins tables of different organizations (two unrelated org_id values)")


def problems(sql: str, schema: Schema) -> list[str]:
    """Every way `sql` breaks the rule; [] when it keeps it or says it sweeps on purpose."""
    if ALL_ORGANIZATIONS in sql:
        return []
    return Check(sql, schema).problems
