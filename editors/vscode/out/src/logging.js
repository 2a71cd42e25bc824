"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.redactingChannel = redactingChannel;
const settings_1 = require("./settings");
const TEXT_METHODS = new Set(['append', 'appendLine', 'replace', 'trace', 'debug', 'info', 'warn', 'error']);
function redactArgument(value, secrets) {
    if (typeof value === 'string') {
        return (0, settings_1.redactText)(value, secrets);
    }
    if (value instanceof Error) {
        const text = value.stack ?? `${value.name}: ${value.message}`;
        const redacted = (0, settings_1.redactText)(text, secrets);
        return redacted === text ? value : redacted;
    }
    if (typeof value === 'object' && value !== null) {
        let json;
        try {
            json = JSON.stringify(value);
        }
        catch {
            return value;
        }
        if (json !== undefined && (0, settings_1.redactText)(json, secrets) !== json) {
            return (0, settings_1.redactText)(json, secrets);
        }
    }
    return value;
}
function redactingChannel(channel, secrets) {
    return new Proxy(channel, {
        get(target, property) {
            // The target as `this`: VS Code's channel may keep its state in private fields.
            const value = Reflect.get(target, property);
            if (typeof value !== 'function') {
                return value;
            }
            if (typeof property === 'string' && TEXT_METHODS.has(property)) {
                return (...args) => {
                    const current = secrets().filter((s) => typeof s === 'string' && s !== '');
                    return value.apply(target, current.length === 0 ? args : args.map((arg) => redactArgument(arg, current)));
                };
            }
            return value.bind(target);
        },
    });
}
//# sourceMappingURL=logging.js.map