// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// Test-only ERC-20: decimals chosen at deploy (USDC-like 6 or ETH-like 18), and anyone may mint.
contract TestToken is ERC20 {
    uint8 private immutable _decimals;

    constructor(string memory name_, string memory symbol_, uint8 decimals_) ERC20(name_, symbol_) {
        _decimals = decimals_;
    }

    function decimals() public view override returns (uint8) {
        return _decimals;
    }

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}

/// Test-only ERC-20 that, like USDT on Ethereum, changes a non-zero allowance only to zero.
contract TestStrictApproveToken is TestToken {
    constructor() TestToken("Strict USD", "sUSD", 6) {}

    function approve(address spender, uint256 value) public override returns (bool) {
        require(value == 0 || allowance(msg.sender, spender) == 0, "approve from non-zero to non-zero");
        return super.approve(spender, value);
    }
}

/// Test-only ERC-20 taking 1% of every transfer between holders for its deployer, as fee-on-transfer tokens do: the
/// recipient gets 99%, and the Transfer log to it says so.
contract TestFeeToken is TestToken {
    address private immutable collector;

    constructor() TestToken("Fee USD", "fUSD", 6) {
        collector = msg.sender;
    }

    function _update(address from, address to, uint256 value) internal override {
        if (from == address(0) || to == address(0) || from == collector) return super._update(from, to, value);
        uint256 fee = value / 100;
        super._update(from, collector, fee);
        super._update(from, to, value - fee);
    }
}

/// Test-only ERC-20 its deployer can pause, as stablecoins' issuers can: paused, every transfer reverts.
contract TestPausableToken is TestToken {
    address private immutable issuer;
    bool public paused;

    constructor() TestToken("Pausable USD", "pUSD", 6) {
        issuer = msg.sender;
    }

    function pause() external {
        require(msg.sender == issuer, "not the issuer");
        paused = true;
    }

    function _update(address from, address to, uint256 value) internal override {
        require(!paused, "token paused");
        super._update(from, to, value);
    }
}
