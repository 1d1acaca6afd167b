//! Syntactic facts about expressions that the rules need: what value an
//! expression evidently is, what name a key spells, whether a key or argument is
//! built from strings, and which built-in a member chain starts at. No reporting.

use oxc_ast::ast::*;
use oxc_span::Span;
use oxc_syntax::operator::{BinaryOperator, UnaryOperator};

use super::rules::{BUILTINS, STRING_BUILDER_FUNCTIONS, STRING_BUILDER_METHODS};

/// The value an expression evaluates to when that is syntactically evident:
/// `(x)` and `(0, x)` are `x`.
pub(super) fn value_of<'x, 'a>(expression: &'x Expression<'a>) -> &'x Expression<'a> {
    let mut current = expression.without_parentheses();
    while let Expression::SequenceExpression(sequence) = current {
        match sequence.expressions.last() {
            Some(last) => current = last.without_parentheses(),
            None => break,
        }
    }
    current
}

/// The property a member expression names, if it is spelled out (`a.b`, `a["b"]`).
pub(super) fn member_name<'x>(member: &'x MemberExpression<'_>) -> Option<&'x str> {
    match member {
        MemberExpression::StaticMemberExpression(m) => Some(m.property.name.as_str()),
        MemberExpression::ComputedMemberExpression(m) => {
            literal_key(&m.expression).map(|(_, name)| name)
        }
        MemberExpression::PrivateFieldExpression(_) => None,
    }
}

/// The name spelled by a string or substitution-free template key.
pub(super) fn literal_key<'x>(key: &'x Expression<'_>) -> Option<(Span, &'x str)> {
    match key.without_parentheses() {
        Expression::StringLiteral(lit) => Some((lit.span, lit.value.as_str())),
        Expression::TemplateLiteral(lit) => {
            lit.single_quasi().map(|text| (lit.span, text.as_str()))
        }
        _ => None,
    }
}

pub(super) fn is_number_literal(key: &Expression<'_>) -> bool {
    let key = key.without_parentheses();
    matches!(
        key,
        Expression::NumericLiteral(_) | Expression::BigIntLiteral(_)
    ) || matches!(key, Expression::UnaryExpression(u)
            if u.operator == UnaryOperator::UnaryNegation && is_number_literal(&u.argument))
}

/// Whether a computed key can spell a property name out of string pieces.
pub(super) fn key_is_built_from_strings(key: &Expression<'_>) -> bool {
    match key {
        Expression::StringLiteral(_)
        | Expression::NumericLiteral(_)
        | Expression::BigIntLiteral(_)
        | Expression::BooleanLiteral(_)
        | Expression::NullLiteral(_)
        | Expression::Identifier(_)
        | Expression::ThisExpression(_)
        | Expression::Super(_)
        | Expression::StaticMemberExpression(_)
        | Expression::ComputedMemberExpression(_)
        | Expression::PrivateFieldExpression(_)
        | Expression::ChainExpression(_)
        | Expression::PrivateInExpression(_)
        | Expression::UnaryExpression(_)
        | Expression::UpdateExpression(_) => false,
        Expression::TemplateLiteral(template) => !template.expressions.is_empty(),
        Expression::BinaryExpression(binary) => {
            (binary.operator == BinaryOperator::Addition
                && (has_string_operand(&binary.left) || has_string_operand(&binary.right)))
                || key_is_built_from_strings(&binary.left)
                || key_is_built_from_strings(&binary.right)
        }
        Expression::ConditionalExpression(conditional) => {
            key_is_built_from_strings(&conditional.consequent)
                || key_is_built_from_strings(&conditional.alternate)
        }
        Expression::LogicalExpression(logical) => {
            key_is_built_from_strings(&logical.left) || key_is_built_from_strings(&logical.right)
        }
        Expression::SequenceExpression(sequence) => sequence
            .expressions
            .last()
            .is_some_and(key_is_built_from_strings),
        Expression::AwaitExpression(await_) => key_is_built_from_strings(&await_.argument),
        Expression::ParenthesizedExpression(paren) => key_is_built_from_strings(&paren.expression),
        Expression::CallExpression(call) => is_string_builder_call(call),
        // Arrays (`[['constructor']]` stringifies), objects, functions,
        // assignments, tagged templates, `new`, regexes, …
        _ => true,
    }
}

/// Whether an operand of `+` makes it a string concatenation.
pub(super) fn has_string_operand(operand: &Expression<'_>) -> bool {
    match operand {
        Expression::StringLiteral(_) | Expression::TemplateLiteral(_) => true,
        Expression::TaggedTemplateExpression(_) => true,
        Expression::BinaryExpression(binary) if binary.operator == BinaryOperator::Addition => {
            has_string_operand(&binary.left) || has_string_operand(&binary.right)
        }
        Expression::ParenthesizedExpression(paren) => has_string_operand(&paren.expression),
        Expression::CallExpression(call) => is_string_builder_call(call),
        _ => false,
    }
}

pub(super) fn is_string_builder_call(call: &CallExpression<'_>) -> bool {
    match call.callee.without_parentheses() {
        Expression::Identifier(id) => STRING_BUILDER_FUNCTIONS.contains(&id.name.as_str()),
        callee => {
            let Some(member) = callee.as_member_expression() else {
                return false;
            };
            let method = member_name(member);
            method.is_some_and(|m| STRING_BUILDER_METHODS.contains(&m))
                // `(1234).toString(36)` spells any lowercase word.
                || (method == Some("toString") && !call.arguments.is_empty())
                || rooted_in_literal(member.object())
        }
    }
}

/// `'abc'.split('')…`, `[...].map(…)…`: the receiver chain starts at a literal.
pub(super) fn rooted_in_literal(expression: &Expression<'_>) -> bool {
    let mut current = expression;
    loop {
        match current {
            Expression::StringLiteral(_)
            | Expression::TemplateLiteral(_)
            | Expression::ArrayExpression(_)
            | Expression::NumericLiteral(_) => return true,
            Expression::CallExpression(call) => current = &call.callee,
            Expression::ParenthesizedExpression(paren) => current = &paren.expression,
            other => match other.as_member_expression() {
                Some(member) => current = member.object(),
                None => return false,
            },
        }
    }
}

/// Whether an argument is evidently a string (for string-evaluating timers).
pub(super) fn is_string_valued(expression: &Expression<'_>) -> bool {
    match expression.without_parentheses() {
        Expression::StringLiteral(_)
        | Expression::TemplateLiteral(_)
        | Expression::TaggedTemplateExpression(_) => true,
        Expression::BinaryExpression(binary) => {
            binary.operator == BinaryOperator::Addition
                && (has_string_operand(&binary.left) || has_string_operand(&binary.right))
        }
        Expression::CallExpression(call) => is_string_builder_call(call),
        _ => false,
    }
}

/// The built-in a static member chain starts at: `Object`, `Object.prototype`,
/// `Array.prototype.map` all start at a built-in.
pub(super) fn builtin_root<'x>(expression: &'x Expression<'_>) -> Option<&'x str> {
    let mut current = expression;
    loop {
        match current.without_parentheses() {
            Expression::Identifier(id) => {
                let name = id.name.as_str();
                return BUILTINS.contains(&name).then_some(name);
            }
            Expression::StaticMemberExpression(member) => current = &member.object,
            Expression::ComputedMemberExpression(member)
                if literal_key(&member.expression).is_some() =>
            {
                current = &member.object;
            }
            _ => return None,
        }
    }
}

/// Describes `target` if it is a built-in or a prototype (for `Object.assign`).
pub(super) fn describe_shared_target(target: &Expression<'_>) -> Option<String> {
    let through_prototype = {
        let mut current = target;
        let mut found = false;
        while let Some(member) = current.without_parentheses().as_member_expression() {
            found |= member_name(member) == Some("prototype");
            current = member.object();
        }
        found
    };
    match (builtin_root(target), through_prototype) {
        (Some(root), true) => Some(format!("`{root}.prototype`")),
        (Some(root), false) => Some(format!("built-in `{root}`")),
        (None, true) => Some("a `.prototype`".to_string()),
        (None, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

    #[test]
    fn computed_keys() {
        assert_rule("x['con' + 'structor']", "computed-key");
        assert_rule("x[`con${s}`]", "computed-key");
        assert_rule("x[String.fromCharCode(99)]", "computed-key");
        assert_rule("x[['con', 'structor'].join('')]", "computed-key");
        assert_rule("x[(1234).toString(36)]", "computed-key");
        assert_rule("const { ['con' + 'structor']: c } = f", "computed-key");
        assert_ok("x[i]; x[i + 1]; x[key]; x[a.b]; x[f(y)]; x[-1]; x[k.trim()]");
        assert_ok("const o = { ['field_' + i]: 1 }");
    }
}
