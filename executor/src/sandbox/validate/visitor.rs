//! The AST pass: one walk over the parsed script that applies every rule which
//! depends on where a name or construct appears, and bounds nesting on the AST.
//! It reports findings by (wrapped) byte offset; positions are mapped elsewhere.

use std::collections::HashSet;

use oxc_ast::ast::*;
use oxc_ast_visit::{Visit, walk};
use oxc_span::{GetSpan, Span};
use oxc_syntax::{
    operator::{AssignmentOperator, UnaryOperator},
    scope::ScopeFlags,
};

use super::{
    expressions::{
        builtin_root, describe_shared_target, is_number_literal, is_string_valued,
        key_is_built_from_strings, literal_key, member_name, value_of,
    },
    rules::{
        BIND, BUILTINS, GLOBAL_OBJECTS, PROP, REF, STR, STRING_TIMERS, blocked_name_message,
        name_rule,
    },
    validation_limits::ValidationLimits,
};

/// The AST walk also bounds plain recursion (long operator and member chains
/// that do not count as nesting) at this multiple of `max_depth`.
const CHAIN_FACTOR: usize = 16;

/// Walks the AST once, recording violations by (wrapped) byte offset.
pub(crate) struct RuleVisitor<'a> {
    max_depth: usize,
    max_chain: usize,
    /// Nesting as reported to users: compound statements, functions, classes,
    /// patterns and expressions, except the continuation of left-associative
    /// chains (`a + b + c`, `a.b.c()`).
    depth: usize,
    /// Plain recursion depth over statements and expressions.
    recursion: usize,
    /// The next expression continues a chain and does not nest.
    flat_next: bool,
    too_deep: bool,
    /// Whether `this` is allowed in the innermost non-arrow function.
    this_allowed: Vec<bool>,
    /// The next function visited is a class method.
    method_next: bool,
    findings: Vec<(u32, &'static str, String)>,
    /// Names bound to function or class values anywhere in the script.
    function_names: HashSet<&'a str>,
    /// Every declared name.
    declared: HashSet<&'a str>,
    /// `name[<non-literal>]` accesses, checked against `function_names` at the end.
    computed_on_names: Vec<(&'a str, u32)>,
    /// References to `__…` names, checked against `declared` at the end.
    dunder_refs: Vec<(&'a str, u32)>,
}

impl<'a> RuleVisitor<'a> {
    pub(crate) fn new(limits: &ValidationLimits) -> Self {
        Self {
            max_depth: limits.max_depth,
            max_chain: limits
                .max_depth
                .saturating_mul(CHAIN_FACTOR)
                .max(CHAIN_FACTOR),
            depth: 0,
            recursion: 0,
            flat_next: false,
            too_deep: false,
            this_allowed: vec![false],
            method_next: false,
            findings: Vec::new(),
            function_names: HashSet::new(),
            declared: HashSet::new(),
            computed_on_names: Vec::new(),
            dunder_refs: Vec::new(),
        }
    }

    pub(crate) fn finish(mut self) -> Vec<(u32, &'static str, String)> {
        for (name, offset) in std::mem::take(&mut self.computed_on_names) {
            if self.function_names.contains(name) {
                self.report(
                    offset,
                    "constructor-chain",
                    format!(
                        "computed property access on the function or class `{name}` can reach its \
                         `constructor`: use a named property"
                    ),
                );
            }
        }
        for (name, offset) in std::mem::take(&mut self.dunder_refs) {
            if !self.declared.contains(name) {
                self.report(
                    offset,
                    "internal-name",
                    format!(
                        "`{name}` is not allowed: names starting with `__` are reserved for the \
                         sandbox runtime (declare it in your script if it is yours)"
                    ),
                );
            }
        }
        self.findings
    }

    fn report(&mut self, offset: u32, rule: &'static str, message: String) {
        self.findings.push((offset, rule, message));
    }

    /// Enters a node; `false` if it is too deep to visit.
    fn enter(&mut self, nests: bool, span: Span) -> bool {
        let depth = self.depth + usize::from(nests);
        let recursion = self.recursion + 1;
        if depth > self.max_depth || recursion > self.max_chain {
            if !self.too_deep {
                self.too_deep = true;
                let message = if depth > self.max_depth {
                    format!(
                        "the code is nested more than {} levels deep: flatten it with helper \
                         functions or intermediate variables",
                        self.max_depth
                    )
                } else {
                    format!(
                        "an expression chains more than {} operators, calls or member accesses: \
                         split it into several statements",
                        self.max_chain
                    )
                };
                self.report(span.start, "too-deep", message);
            }
            return false;
        }
        self.depth = depth;
        self.recursion = recursion;
        true
    }

    fn leave(&mut self, nests: bool) {
        self.depth -= usize::from(nests);
        self.recursion -= 1;
    }

    fn check_identifier(&mut self, name: &str, span: Span) {
        if !name.is_ascii() {
            self.report(
                span.start,
                "non-ascii-identifier",
                format!(
                    "identifier `{name}` contains non-ASCII characters, which can hide look-alike \
                     names: use ASCII names, and quote non-ASCII property keys (`{{\"{name}\": 1}}`, \
                     `obj[\"{name}\"]`); non-ASCII text is fine in strings and comments"
                ),
            );
        }
    }

    fn check_name(&mut self, name: &str, use_: u8, span: Span) {
        if let Some(rule) = name_rule(name, use_) {
            self.report(
                span.start,
                rule.rule,
                blocked_name_message(name, use_, rule.why),
            );
        }
    }

    fn check_literal_key(&mut self, key: &Expression<'a>) {
        if let Some((span, name)) = literal_key(key) {
            self.check_name(name, PROP, span);
        }
    }

    /// Rules for a computed key that reads a property (`x[key]`, `{[key]: v} = x`).
    fn check_computed_key(&mut self, key: &Expression<'a>) {
        if key_is_built_from_strings(key) {
            self.report(
                key.span().start,
                "computed-key",
                "property names built from strings (concatenation, templates with substitutions, \
                 `String.fromCharCode`, `join`, …) are not allowed as computed keys: that is how \
                 blocked names get smuggled in; use a literal name, a plain variable, or \
                 `Object.entries()`"
                    .to_string(),
            );
        }
    }

    /// Rules for writing through a member expression.
    fn check_member_write(&mut self, member: &MemberExpression<'a>) {
        let mut through_prototype = false;
        let mut root = None;
        let mut current = member;
        loop {
            if member_name(current) == Some("prototype") {
                through_prototype = true;
            }
            match current.object().without_parentheses() {
                Expression::Identifier(id) => {
                    root = Some(id.name.as_str());
                    break;
                }
                object => match object.as_member_expression() {
                    Some(inner) => current = inner,
                    None => break,
                },
            }
        }
        let builtin = root.filter(|name| BUILTINS.contains(name));
        let target = match (builtin, root, through_prototype) {
            (Some(name), _, true) | (None, Some(name), true) => format!("`{name}.prototype`"),
            (Some(name), _, false) => format!("built-in `{name}`"),
            (None, None, true) => "a `.prototype`".to_string(),
            (None, _, false) => return,
        };
        self.report(
            member.span().start,
            "builtin-mutation",
            format!(
                "modifying {target} is not allowed: the sandbox and other code rely on built-ins and \
                 prototypes; write a helper function or a class instead"
            ),
        );
    }

    fn check_call(&mut self, call: &CallExpression<'a>) {
        let callee = value_of(&call.callee);
        let callee_name = match callee {
            Expression::Identifier(id) => Some(id.name.as_str()),
            Expression::StaticMemberExpression(member) => Some(member.property.name.as_str()),
            _ => None,
        };
        let first = call.arguments.first().and_then(Argument::as_expression);
        if let (Some(name), Some(first)) = (callee_name, first)
            && STRING_TIMERS.contains(&name)
            && is_string_valued(first)
        {
            self.report(
                first.span().start,
                "eval",
                format!(
                    "passing a string to `{name}` evaluates it as code, and scripts cannot evaluate \
                     strings as code: pass a function"
                ),
            );
        }
        if let Expression::StaticMemberExpression(member) = callee
            && member.object.without_parentheses().is_specific_id("Object")
            && member.property.name == "assign"
            && let Some(target) = first
            && let Some(described) = describe_shared_target(target)
        {
            self.report(
                target.span().start,
                "builtin-mutation",
                format!(
                    "`Object.assign` into {described} is not allowed: the sandbox and other code rely \
                     on built-ins and prototypes; copy into a new object (`{{...a, ...b}}`) instead"
                ),
            );
        }
    }

    /// Rules for `object[key]` that depend on what the object is.
    fn check_computed_object(&mut self, object: &Expression<'a>, key: &Expression<'a>) -> bool {
        let literal = literal_key(key).is_some() || is_number_literal(key);
        let object = value_of(object);
        match object {
            Expression::Identifier(id) if GLOBAL_OBJECTS.contains(&id.name.as_str()) => {
                self.report(
                    id.span.start,
                    "global-computed",
                    format!(
                        "computed access on the global object `{}` is not allowed: it reaches every \
                         blocked global by name; use the globals you need (`JSON`, `Math`, …) directly",
                        id.name
                    ),
                );
                return false;
            }
            _ if literal => {}
            Expression::FunctionExpression(_)
            | Expression::ArrowFunctionExpression(_)
            | Expression::ClassExpression(_)
            | Expression::Super(_) => {
                self.report(
                    key.span().start,
                    "constructor-chain",
                    "computed property access on a function, class or `super` can reach its \
                     `constructor`: use a named property"
                        .to_string(),
                );
            }
            _ => {
                if let Some(root) = builtin_root(object) {
                    self.report(
                        key.span().start,
                        "builtin-computed",
                        format!(
                            "computed property access on built-in `{root}` with a non-literal key is \
                             not allowed: it can reach internals such as its constructor; use a named \
                             property"
                        ),
                    );
                } else if let Expression::Identifier(id) = object {
                    self.computed_on_names
                        .push((id.name.as_str(), key.span().start));
                }
            }
        }
        true
    }

    fn record_function_binding(&mut self, name: &'a str, value: &Expression<'a>) {
        if matches!(
            value.without_parentheses(),
            Expression::FunctionExpression(_)
                | Expression::ArrowFunctionExpression(_)
                | Expression::ClassExpression(_)
        ) {
            self.function_names.insert(name);
        }
    }
}

impl<'a> Visit<'a> for RuleVisitor<'a> {
    fn visit_statement(&mut self, it: &Statement<'a>) {
        let nests = matches!(
            it,
            Statement::IfStatement(_)
                | Statement::ForStatement(_)
                | Statement::ForInStatement(_)
                | Statement::ForOfStatement(_)
                | Statement::WhileStatement(_)
                | Statement::DoWhileStatement(_)
                | Statement::TryStatement(_)
                | Statement::SwitchStatement(_)
                | Statement::LabeledStatement(_)
                | Statement::WithStatement(_)
        );
        if !self.enter(nests, it.span()) {
            return;
        }
        match it {
            Statement::WithStatement(with) => self.report(
                with.span.start,
                "with",
                "`with` is not allowed: it makes every name lookup depend on an object's contents; \
                 use the object's properties directly"
                    .to_string(),
            ),
            Statement::DebuggerStatement(debugger) => self.report(
                debugger.span.start,
                "debugger",
                "`debugger` is not allowed: no debugger is attached to the sandbox; use \
                 `console.log`"
                    .to_string(),
            ),
            Statement::ImportDeclaration(import) => self.report(
                import.span.start,
                "import",
                "static `import` is not allowed: scripts cannot load modules; call tools through \
                 `tools`"
                    .to_string(),
            ),
            Statement::ExportAllDeclaration(_)
            | Statement::ExportDefaultDeclaration(_)
            | Statement::ExportDeclaration(_)
            | Statement::ExportNamedDeclaration(_)
            | Statement::ExportFromDeclaration(_) => self.report(
                it.span().start,
                "export",
                "`export` is not allowed: a script is the body of a function; `return` its result \
                 instead"
                    .to_string(),
            ),
            _ => {}
        }
        walk::walk_statement(self, it);
        self.leave(nests);
    }

    fn visit_expression(&mut self, it: &Expression<'a>) {
        let flat = std::mem::take(&mut self.flat_next);
        // Functions and classes count in their own visit methods.
        let nests = !flat
            && !matches!(
                it,
                Expression::BooleanLiteral(_)
                    | Expression::NullLiteral(_)
                    | Expression::NumericLiteral(_)
                    | Expression::BigIntLiteral(_)
                    | Expression::RegExpLiteral(_)
                    | Expression::StringLiteral(_)
                    | Expression::Identifier(_)
                    | Expression::ThisExpression(_)
                    | Expression::Super(_)
                    | Expression::FunctionExpression(_)
                    | Expression::ArrowFunctionExpression(_)
                    | Expression::ClassExpression(_)
            );
        if !self.enter(nests, it.span()) {
            return;
        }
        walk::walk_expression(self, it);
        self.leave(nests);
    }

    fn visit_binding_pattern(&mut self, it: &BindingPattern<'a>) {
        let nests = matches!(
            it,
            BindingPattern::ObjectPattern(_) | BindingPattern::ArrayPattern(_)
        );
        if !self.enter(nests, it.span()) {
            return;
        }
        walk::walk_binding_pattern(self, it);
        self.leave(nests);
    }

    fn visit_assignment_target_pattern(&mut self, it: &AssignmentTargetPattern<'a>) {
        if !self.enter(true, it.span()) {
            return;
        }
        walk::walk_assignment_target_pattern(self, it);
        self.leave(true);
    }

    fn visit_function(&mut self, it: &Function<'a>, flags: ScopeFlags) {
        let is_method = std::mem::take(&mut self.method_next);
        if let Some(id) = &it.id {
            self.function_names.insert(id.name.as_str());
        }
        if !self.enter(true, it.span) {
            return;
        }
        self.this_allowed.push(is_method);
        walk::walk_function(self, it, flags);
        self.this_allowed.pop();
        self.leave(true);
    }

    fn visit_arrow_function_expression(&mut self, it: &ArrowFunctionExpression<'a>) {
        if !self.enter(true, it.span) {
            return;
        }
        walk::walk_arrow_function_expression(self, it);
        self.leave(true);
    }

    fn visit_class(&mut self, it: &Class<'a>) {
        if let Some(id) = &it.id {
            self.function_names.insert(id.name.as_str());
        }
        if !self.enter(true, it.span) {
            return;
        }
        walk::walk_class(self, it);
        self.leave(true);
    }

    fn visit_method_definition(&mut self, it: &MethodDefinition<'a>) {
        self.visit_decorators(&it.decorators);
        // A class's own `constructor() {}` is fine; any other member named
        // `constructor` (static method, computed key) is not.
        if it.kind != MethodDefinitionKind::Constructor {
            self.visit_property_key(&it.key);
        }
        let flags = match it.kind {
            MethodDefinitionKind::Get => ScopeFlags::Function | ScopeFlags::GetAccessor,
            MethodDefinitionKind::Set => ScopeFlags::Function | ScopeFlags::SetAccessor,
            MethodDefinitionKind::Constructor => ScopeFlags::Function | ScopeFlags::Constructor,
            MethodDefinitionKind::Method => ScopeFlags::Function,
        };
        self.method_next = true;
        self.visit_function(&it.value, flags);
        self.method_next = false;
    }

    fn visit_property_definition(&mut self, it: &PropertyDefinition<'a>) {
        self.visit_decorators(&it.decorators);
        self.visit_property_key(&it.key);
        if let Some(value) = &it.value {
            self.this_allowed.push(true);
            self.visit_expression(value);
            self.this_allowed.pop();
        }
    }

    fn visit_accessor_property(&mut self, it: &AccessorProperty<'a>) {
        self.visit_decorators(&it.decorators);
        self.visit_property_key(&it.key);
        if let Some(value) = &it.value {
            self.this_allowed.push(true);
            self.visit_expression(value);
            self.this_allowed.pop();
        }
    }

    fn visit_static_block(&mut self, it: &StaticBlock<'a>) {
        self.this_allowed.push(true);
        walk::walk_static_block(self, it);
        self.this_allowed.pop();
    }

    fn visit_this_expression(&mut self, it: &ThisExpression) {
        if !self.this_allowed.last().copied().unwrap_or(false) {
            self.report(
                it.span.start,
                "this",
                "`this` outside a class body is not allowed: in a plain function it can be the \
                 global object; use a class, or pass the object as a parameter"
                    .to_string(),
            );
        }
    }

    fn visit_identifier_reference(&mut self, it: &IdentifierReference<'a>) {
        let name = it.name.as_str();
        self.check_identifier(name, it.span);
        self.check_name(name, REF, it.span);
        if name.starts_with("__") {
            self.dunder_refs.push((name, it.span.start));
        }
    }

    fn visit_binding_identifier(&mut self, it: &BindingIdentifier<'a>) {
        let name = it.name.as_str();
        self.declared.insert(name);
        self.check_identifier(name, it.span);
        self.check_name(name, BIND, it.span);
    }

    fn visit_identifier_name(&mut self, it: &IdentifierName<'a>) {
        self.check_identifier(it.name.as_str(), it.span);
        self.check_name(it.name.as_str(), PROP, it.span);
    }

    fn visit_label_identifier(&mut self, it: &LabelIdentifier<'a>) {
        self.check_identifier(it.name.as_str(), it.span);
    }

    fn visit_private_identifier(&mut self, it: &PrivateIdentifier<'a>) {
        self.check_identifier(it.name.as_str(), it.span);
    }

    fn visit_string_literal(&mut self, it: &StringLiteral<'a>) {
        self.check_name(it.value.as_str(), STR, it.span);
    }

    fn visit_template_literal(&mut self, it: &TemplateLiteral<'a>) {
        if let Some(text) = it.single_quasi() {
            self.check_name(text.as_str(), STR, it.span);
        }
        walk::walk_template_literal(self, it);
    }

    fn visit_property_key(&mut self, it: &PropertyKey<'a>) {
        if let Some(key) = it.as_expression() {
            self.check_literal_key(key);
        }
        walk::walk_property_key(self, it);
    }

    fn visit_static_member_expression(&mut self, it: &StaticMemberExpression<'a>) {
        self.flat_next = true;
        self.visit_expression(&it.object);
        self.flat_next = false;
        self.visit_identifier_name(&it.property);
    }

    fn visit_computed_member_expression(&mut self, it: &ComputedMemberExpression<'a>) {
        if self.check_computed_object(&it.object, &it.expression) {
            self.flat_next = true;
            self.visit_expression(&it.object);
            self.flat_next = false;
        }
        self.check_literal_key(&it.expression);
        self.check_computed_key(&it.expression);
        self.visit_expression(&it.expression);
    }

    fn visit_private_field_expression(&mut self, it: &PrivateFieldExpression<'a>) {
        self.flat_next = true;
        self.visit_expression(&it.object);
        self.flat_next = false;
        self.visit_private_identifier(&it.field);
    }

    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        self.check_call(it);
        self.flat_next = true;
        self.visit_expression(&it.callee);
        self.flat_next = false;
        self.visit_arguments(&it.arguments);
    }

    fn visit_tagged_template_expression(&mut self, it: &TaggedTemplateExpression<'a>) {
        self.flat_next = true;
        self.visit_expression(&it.tag);
        self.flat_next = false;
        self.visit_template_literal(&it.quasi);
    }

    fn visit_binary_expression(&mut self, it: &BinaryExpression<'a>) {
        self.flat_next = true;
        self.visit_expression(&it.left);
        self.flat_next = false;
        self.visit_expression(&it.right);
    }

    fn visit_logical_expression(&mut self, it: &LogicalExpression<'a>) {
        self.flat_next = true;
        self.visit_expression(&it.left);
        self.flat_next = false;
        self.visit_expression(&it.right);
    }

    fn visit_unary_expression(&mut self, it: &UnaryExpression<'a>) {
        match (&it.operator, it.argument.without_parentheses()) {
            // `typeof window` only ever yields a string.
            (UnaryOperator::Typeof, Expression::Identifier(id))
                if GLOBAL_OBJECTS.contains(&id.name.as_str()) =>
            {
                return;
            }
            (UnaryOperator::Delete, argument) => {
                if let Some(member) = argument.as_member_expression() {
                    self.check_member_write(member);
                }
            }
            _ => {}
        }
        walk::walk_unary_expression(self, it);
    }

    fn visit_simple_assignment_target(&mut self, it: &SimpleAssignmentTarget<'a>) {
        if let Some(member) = it.as_member_expression() {
            self.check_member_write(member);
        } else if let SimpleAssignmentTarget::AssignmentTargetIdentifier(id) = it
            && BUILTINS.contains(&id.name.as_str())
        {
            self.report(
                id.span.start,
                "builtin-mutation",
                format!(
                    "reassigning built-in `{}` is not allowed: the sandbox and other code rely on it; \
                     use a variable with another name",
                    id.name
                ),
            );
        }
        walk::walk_simple_assignment_target(self, it);
    }

    fn visit_assignment_expression(&mut self, it: &AssignmentExpression<'a>) {
        if it.operator == AssignmentOperator::Assign
            && let AssignmentTarget::AssignmentTargetIdentifier(id) = &it.left
        {
            self.record_function_binding(id.name.as_str(), &it.right);
        }
        walk::walk_assignment_expression(self, it);
    }

    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        if let (BindingPattern::BindingIdentifier(id), Some(init)) = (&it.id, &it.init) {
            self.record_function_binding(id.name.as_str(), init);
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_binding_property(&mut self, it: &BindingProperty<'a>) {
        if it.computed
            && let Some(key) = it.key.as_expression()
        {
            self.check_computed_key(key);
        }
        walk::walk_binding_property(self, it);
    }

    fn visit_assignment_target_property_property(
        &mut self,
        it: &AssignmentTargetPropertyProperty<'a>,
    ) {
        if it.computed
            && let Some(key) = it.name.as_expression()
        {
            self.check_computed_key(key);
        }
        walk::walk_assignment_target_property_property(self, it);
    }

    fn visit_import_expression(&mut self, it: &ImportExpression<'a>) {
        self.report(
            it.span.start,
            "dynamic-import",
            "`import()` is not allowed: scripts cannot load modules; call tools through `tools`"
                .to_string(),
        );
        walk::walk_import_expression(self, it);
    }

    fn visit_import_meta(&mut self, it: &ImportMeta) {
        self.report(
            it.span.start,
            "import-meta",
            "`import.meta` is not allowed: it describes the host's module, not the script"
                .to_string(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

    #[test]
    fn ordinary_scripts_pass() {
        assert_ok("const r = await tools.github.create_issue({ title: 'x' });\nreturn r;");
        assert_ok("for (const row of rows) { total += row[col]; }");
        assert_ok("const x = results[i + 1]; return x?.name ?? '无';");
        assert_ok("class A { constructor(x) { this.x = x; } get v() { return this.x; } }");
        assert_ok("outer: for (const a of xs) { for (const b of a) { if (b) continue outer; } }");
        assert_ok("return Object.prototype.hasOwnProperty.call(o, 'k');");
        assert_ok("if (typeof window === 'undefined') { return 1 }");
    }

    #[test]
    fn non_ascii() {
        assert_rule("const café = 1", "non-ascii-identifier");
        assert_rule("x.naïve", "non-ascii-identifier");
        assert_rule("const a\u{200d} = 1", "non-ascii-identifier");
        assert_ok("const s = '你好，世界'; // 注释\nreturn `${s}！`;");
    }
}
